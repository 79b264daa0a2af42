/**
 * `sluice.yml`, the repository's own build settings, read after checkout: profiles, a build
 * plan and the default profile. Pure (the `yaml` and `zod` libraries only), so errors are
 * tested exhaustively. The readRepoConfig activity parses with it; workflow code must never
 * import it (a yaml or zod upgrade would then change decisions on replay; the workflow gets
 * the parsed settings as the activity's result). What the settings mean, and how they combine
 * with the suite's, is in core/profiles.ts.
 *
 * ```yaml
 * default_profile: unit          # optional; default: the suite's own settings ("default")
 * plan: [unit, integration]      # optional; a multi-session build, one session per profile
 * profiles:
 *   unit:
 *     test_pattern: "test/unit/**\/*_test.sh"
 *     test_command: "bash -e"    # optional; null: run the file itself
 *     env: { LOG_LEVEL: debug }  # optional; scalars become strings
 *     workers: 4                 # optional; 1 to 64
 *     junit_pattern: "reports/*.xml"  # optional
 *     affected: { map_every: 10, always_full: [jest.config.js] }  # optional; or `true` (core/affected.ts)
 * hooks: { worker_setup: ./script/db-schema }   # optional; core/buildSetup.ts says when each runs
 * cache: { key_paths: [package-lock.json], save_paths: [node_modules, ~/.npm] }
 * services: [postgresql, redis]
 * artifacts: ["coverage/**"]
 * image: node:22                 # optional; a profile's own `image:` wins (steps/image/)
 * ```
 *
 * Unknown keys are errors (a typo should not silently do nothing). Errors name the line.
 */
import { isMap, isNode, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document } from 'yaml';
import { z } from 'zod';
import { buildSetupShape, imageSchema, setupSettingsOf } from './buildSetupSchema';
import { MAX_ALWAYS_FULL, MAX_MAP_EVERY, MAX_PLAN_PROFILES, MAX_RETRY_FAILED, MAX_WORKERS, PROFILE_NAME, type RepoConfig } from './profiles';

export type ParseResult = { ok: true; config: RepoConfig } | { ok: false; error: string };

const FILE = 'sluice.yml';
const MAX_ERRORS = 5;
const MAX_PATTERN = 1_000;
const MAX_ENV_VALUE = 32 * 1024;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
// `..` as a whole path segment, including inside brace alternatives (as discover.ts refuses).
const PARENT_SEGMENT = /(^|[/\\{,])\.\.($|[/\\},])/;

/** Why a glob is not acceptable (the build would refuse it too), or null. */
function patternProblem(pattern: string): string | null {
  if (pattern.startsWith('/') || pattern.startsWith('\\') || /^[a-zA-Z]:/.test(pattern) || pattern.startsWith('~')) {
    return 'must be relative to the repository root';
  }
  if (PARENT_SEGMENT.test(pattern)) return "must not contain '..'";
  return null;
}

// eslint-disable-next-line no-control-regex
const hasControl = (s: string) => /[\x00-\x08\x0a-\x1f\x7f]/.test(s);

const pattern = z
  .string({ error: 'must be a string (a glob)' })
  .trim()
  .min(1, 'must not be empty')
  .max(MAX_PATTERN, `must be at most ${MAX_PATTERN} characters`)
  .refine((p) => !hasControl(p), 'must not contain control characters')
  .superRefine((p, ctx) => {
    const problem = patternProblem(p);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

const profileName = z
  .string({ error: 'must be a profile name' })
  .regex(PROFILE_NAME, 'must be a profile name: letters, digits, ".", "_" and "-", starting with a letter or digit, at most 100 characters');

/** A message for a value of the wrong type only; other issues keep their own. */
function isPlainObject(v: unknown): boolean {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function typeError(message: string) {
  return (issue: { code: string }) => (issue.code === 'invalid_type' ? message : undefined);
}

const envValue = z
  .union([z.string(), z.number(), z.boolean()], { error: 'must be a string, a number or true/false' })
  .transform(String)
  .pipe(z.string().max(MAX_ENV_VALUE, `must be at most ${MAX_ENV_VALUE} characters`).refine((v) => !v.includes('\0'), 'must not contain NUL'));

/** A whole number from `min` to `max`, each mistake worded with the range. */
const wholeNumber = (min: number, max: number) =>
  z
    .number({ error: `must be a number from ${min} to ${max}` })
    .int(`must be a whole number from ${min} to ${max}`)
    .min(min, `must be from ${min} to ${max}`)
    .max(max, `must be from ${min} to ${max}`);

const affectedSettings = z.strictObject({
  map_every: wholeNumber(1, MAX_MAP_EVERY).optional(),
  always_full: z.array(pattern, { error: 'must be a list of globs' }).max(MAX_ALWAYS_FULL, `must list at most ${MAX_ALWAYS_FULL} globs`).optional(),
});

/** `affected:` true, false, or its settings, whose own mistakes are said where they are (a union would only say it matched neither). */
const affectedSchema = z
  .union([z.boolean(), z.custom<Record<string, unknown>>(isPlainObject)], { error: 'must be true, false or a mapping of map_every and always_full' })
  .transform((value, ctx) => {
    if (typeof value === 'boolean') return value;
    const parsed = affectedSettings.safeParse(value);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) ctx.addIssue({ ...issue, input: value } as Parameters<typeof ctx.addIssue>[0]);
    return z.NEVER;
  });

const profileSchema = z.strictObject(
  {
    test_pattern: pattern.optional(),
    test_command: z
      .string({ error: 'must be a string, or null for none' })
      .trim()
      .min(1, 'must not be empty (null: run each file itself)')
      .max(MAX_PATTERN, `must be at most ${MAX_PATTERN} characters`)
      .refine((c) => !hasControl(c), 'must not contain control characters')
      .nullable()
      .optional(),
    env: z
      .record(
        z.string().regex(ENV_NAME, 'is not an environment variable name (letters, digits and "_", not starting with a digit)'),
        envValue,
        { error: typeError('must be a mapping of variable names to values') },
      )
      .optional(),
    workers: wholeNumber(1, MAX_WORKERS).optional(),
    junit_pattern: pattern.nullable().optional(),
    retry_failed: wholeNumber(0, MAX_RETRY_FAILED).optional(),
    // The profile's own image, over the file's top-level `image` (null: none for this profile).
    image: imageSchema.optional(),
    // Run only the test files a change can affect (core/affected.ts).
    affected: affectedSchema.optional(),
  },
  { error: 'must be a mapping of profile settings (test_pattern, test_command, env, workers, junit_pattern, retry_failed, image, affected)' },
);

const fileSchema = z.strictObject(
  {
    // `unit:` with nothing under it: a profile that only exists (its settings come from the suite).
    profiles: z
      .record(profileName, profileSchema.nullable().transform((p) => p ?? {}), {
        error: typeError('must be a mapping of profile names to settings'),
      })
      .optional(),
    plan: z
      .array(profileName, { error: 'must be a list of profile names' })
      .max(MAX_PLAN_PROFILES, `must list at most ${MAX_PLAN_PROFILES} profiles`)
      .superRefine((names, ctx) => {
        const seen = new Set<string>();
        names.forEach((name, i) => {
          if (seen.has(name)) ctx.addIssue({ code: 'custom', message: `lists ${JSON.stringify(name)} more than once`, path: [i] });
          seen.add(name);
        });
      })
      .optional(),
    default_profile: profileName.optional(),
    // What the build sets up around its tests (core/buildSetup.ts), as a suite's settings say it.
    ...buildSetupShape,
  },
  { error: `must be a mapping with the keys profiles, plan, default_profile, image, hooks, cache, services and artifacts` },
);

export function parseSluiceYml(text: string): ParseResult {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, merge: true, prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const errors = doc.errors.slice(0, MAX_ERRORS).map((e) => {
      const line = e.linePos?.[0]?.line;
      // The first line of the message; the rest is a code excerpt.
      const message = (e.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
      return `${FILE}${line ? ` line ${line}` : ''}: ${message}`;
    });
    return { ok: false, error: errors.join('; ') };
  }

  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    return { ok: false, error: `${FILE}: ${(err as Error).message}` };
  }
  // An empty file (or only comments) configures nothing.
  if (data === null || data === undefined) return { ok: true, config: { profiles: {} } };

  // Validation would drop it silently; a key that can only be a mistake (or a trick) is an error.
  const proto = protoKeyPath(data, []);
  if (proto) {
    const line = lineOf(doc, lineCounter, proto, true);
    return { ok: false, error: `${FILE}${line ? ` line ${line}` : ''}: ${where(proto.slice(0, -1))}the key "__proto__" is not allowed` };
  }

  const parsed = fileSchema.safeParse(data);
  if (!parsed.success) {
    // In the order of the file, so the first one named is the first one to fix.
    const errors = parsed.error.issues
      .flatMap((issue) => describeIssue(doc, lineCounter, issue))
      .sort((a, b) => (a.line ?? 0) - (b.line ?? 0))
      .slice(0, MAX_ERRORS)
      .map((e) => `${FILE}${e.line ? ` line ${e.line}` : ''}: ${e.text}`);
    return { ok: false, error: errors.join('; ') };
  }
  const config: RepoConfig = { profiles: parsed.data.profiles ?? {} };
  if (parsed.data.plan !== undefined) config.plan = parsed.data.plan;
  if (parsed.data.default_profile !== undefined) config.default_profile = parsed.data.default_profile;
  const setup = setupSettingsOf(parsed.data);
  if (Object.keys(setup).length > 0) config.setup = setup;
  return { ok: true, config };
}

interface Problem {
  line: number | null;
  text: string;
}

function describeIssue(doc: Document, lines: LineCounter, issue: z.core.$ZodIssue): Problem[] {
  const path = issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => ({
      line: lineOf(doc, lines, [...path, key], true),
      text: `${where(path)}unknown key ${JSON.stringify(key)}`,
    }));
  }
  if (issue.code === 'invalid_key') {
    // A bad key of a mapping (a profile or variable name), reported at the key itself.
    const key = path[path.length - 1];
    const message = issue.issues[0]?.message ?? issue.message;
    return [{ line: lineOf(doc, lines, path, true), text: `${where(path.slice(0, -1))}${JSON.stringify(key)} ${message}` }];
  }
  const subject = path.length > 0 ? path.join('.') : 'the file';
  return [{ line: lineOf(doc, lines, path), text: `${subject} ${issue.message}` }];
}

/** The path of the first own `__proto__` key anywhere in `value`, else null. */
function protoKeyPath(value: unknown, path: (string | number)[]): (string | number)[] | null {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = protoKeyPath(value[i], [...path, i]);
      if (found) return found;
    }
  } else if (value !== null && typeof value === 'object') {
    for (const key of Object.keys(value)) {
      if (key === '__proto__') return [...path, key];
      const found = protoKeyPath((value as Record<string, unknown>)[key], [...path, key]);
      if (found) return found;
    }
  }
  return null;
}

function where(path: readonly (string | number)[]): string {
  return path.length > 0 ? `${path.join('.')}: ` : '';
}

/**
 * The 1-based line of the node at `path` (or of its key, with `atKey`), else of the nearest
 * ancestor found.
 */
function lineOf(doc: Document, lines: LineCounter, path: readonly (string | number)[], atKey = false): number | null {
  let node: unknown = doc.contents;
  let offset = isNode(node) ? node.range?.[0] : undefined;
  for (let i = 0; i < path.length; i++) {
    const segment = path[i]!;
    const last = i === path.length - 1;
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && String(isScalar(p.key) ? p.key.value : p.key) === String(segment));
      if (!pair) break;
      const target = last && atKey ? pair.key : pair.value;
      const keyStart = isNode(pair.key) ? pair.key.range?.[0] : undefined;
      offset = (isNode(target) ? target.range?.[0] : undefined) ?? keyStart ?? offset;
      node = pair.value;
    } else if (isSeq(node) && typeof segment === 'number') {
      const item = node.items[segment];
      if (!isNode(item)) break;
      offset = item.range?.[0] ?? offset;
      node = item;
    } else {
      break;
    }
  }
  return offset === undefined ? null : lines.linePos(offset).line;
}
