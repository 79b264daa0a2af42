/**
 * What the workflow bundle can reach. Workflow code decides and activities parse: sluice.yml
 * is parsed (yaml, zod) in the readRepoConfig activity, so that a parser or library upgrade
 * can never change a decision on replay. This walks the value imports (type-only imports are
 * erased and do not count) from src/workflows/index.ts, as the bundler would.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.join(__dirname, '..', '..');

/** The modules a file imports at run time: relative ones resolved to files, others by package name. */
function valueImports(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
  const out: string[] = [];
  for (const stmt of source.statements) {
    let spec: string | undefined;
    if (ts.isImportDeclaration(stmt)) {
      const clause = stmt.importClause;
      if (clause?.isTypeOnly) continue;
      const named = clause?.namedBindings;
      const onlyTypes =
        clause !== undefined &&
        clause.name === undefined &&
        named !== undefined &&
        ts.isNamedImports(named) &&
        named.elements.length > 0 &&
        named.elements.every((e) => e.isTypeOnly);
      if (onlyTypes) continue;
      spec = (stmt.moduleSpecifier as ts.StringLiteral).text;
    } else if (ts.isExportDeclaration(stmt) && stmt.moduleSpecifier && !stmt.isTypeOnly) {
      spec = (stmt.moduleSpecifier as ts.StringLiteral).text;
    }
    if (spec === undefined) continue;
    if (!spec.startsWith('.')) {
      out.push(spec);
      continue;
    }
    const base = path.resolve(path.dirname(file), spec);
    const resolved = [`${base}.ts`, path.join(base, 'index.ts')].find((f) => existsSync(f));
    if (!resolved) throw new Error(`${path.relative(ROOT, file)}: cannot resolve ${spec}`);
    out.push(resolved);
  }
  return out;
}

function reachable(entry: string): Set<string> {
  const seen = new Set<string>();
  const queue = [entry];
  while (queue.length > 0) {
    const next = queue.shift()!;
    if (seen.has(next)) continue;
    seen.add(next);
    if (path.isAbsolute(next)) queue.push(...valueImports(next));
  }
  return seen;
}

describe('the workflow bundle', () => {
  const modules = reachable(path.join(ROOT, 'src', 'workflows', 'index.ts'));
  const packages = [...modules].filter((m) => !path.isAbsolute(m)).sort();
  const files = [...modules].filter((m) => path.isAbsolute(m)).map((f) => path.relative(ROOT, f)).sort();

  it('reaches neither yaml nor zod, nor the sluice.yml parser', () => {
    expect(packages.filter((p) => p === 'yaml' || p === 'zod' || p.startsWith('zod/'))).toEqual([]);
    expect(files).not.toContain(path.join('src', 'core', 'sluiceYml.ts'));
    expect(files).not.toContain('src/config.ts');
  });

  it('imports Temporal workflow APIs only, besides our own pure modules', () => {
    expect(packages).toEqual(['@temporalio/common', '@temporalio/workflow']);
    // No activity code: activities/types.ts is imported for its types only.
    expect(files.filter((f) => f.startsWith(path.join('src', 'activities')))).toEqual([]);
    expect(files).toContain(path.join('src', 'core', 'profiles.ts'));
  });
});

describe('the traced workflow bundle (workflows/tracing.ts, bundled in when tracing is on)', () => {
  const modules = reachable(path.join(ROOT, 'src', 'workflows', 'tracing.ts'));
  const packages = [...new Set([...modules].filter((m) => !path.isAbsolute(m)))].sort();
  const files = [...modules].filter((m) => path.isAbsolute(m)).map((f) => path.relative(ROOT, f));

  it("adds OpenTelemetry's API and Temporal's workflow interceptors for it, and nothing with I/O", () => {
    expect(packages).toEqual(['@opentelemetry/api', '@temporalio/interceptors-opentelemetry/lib/workflow', '@temporalio/workflow']);
    expect(files).not.toContain('src/config.ts');
    expect(files.filter((f) => !f.startsWith(path.join('src', 'workflows')) && !f.startsWith(path.join('src', 'core')))).toEqual([
      path.join('src', 'tracing', 'attributes.ts'),
    ]);
  });
});
