#!/usr/bin/env node
/**
 * `npm run build`: the production build, in dist/ (what `node dist/api/main.js`,
 * `dist/worker/main.js`, `dist/runner/main.js` and `dist/dev.js` run):
 *   1. compiles src/ with tsconfig.build.json (no tests);
 *   2. copies what tsc leaves behind: the SQL migrations (dist/db/migrations) and the web
 *      pages' templates and browser scripts (dist/api/web/views, dist/api/web/assets);
 *   3. bundles the workflow code once into dist/workflow-bundle.js, which workers load instead
 *      of running webpack at every start (src/worker/workflowBundle.ts);
 *   4. makes dist/cli/main.js, the package's bin `sluice`, executable.
 * It builds into a fresh directory beside dist/ and swaps it in at the end, so a failed build
 * leaves the previous dist/ as it was.
 */
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const dist = path.join(root, 'dist');
const next = path.join(root, `.dist-${process.pid}`);
const old = path.join(root, `.dist-old-${process.pid}`);

async function main() {
  fs.rmSync(next, { recursive: true, force: true });
  try {
    execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.build.json'), '--outDir', next], {
      stdio: 'inherit',
    });
    const migrations = path.join(root, 'src', 'db', 'migrations');
    fs.mkdirSync(path.join(next, 'db', 'migrations'), { recursive: true });
    for (const file of fs.readdirSync(migrations).filter((f) => f.endsWith('.sql'))) {
      fs.copyFileSync(path.join(migrations, file), path.join(next, 'db', 'migrations', file));
    }
    // The web pages' Eta templates, read at run time beside the compiled code.
    fs.cpSync(path.join(root, 'src', 'api', 'web', 'views'), path.join(next, 'api', 'web', 'views'), { recursive: true });
    fs.cpSync(path.join(root, 'src', 'api', 'web', 'assets'), path.join(next, 'api', 'web', 'assets'), { recursive: true });
    await require(path.join(next, 'worker', 'workflowBundle.js')).writeWorkflowBundle();
    // The package's bin (`sluice`, the command-line client) runs by its shebang.
    fs.chmodSync(path.join(next, 'cli', 'main.js'), 0o755);
  } catch (err) {
    fs.rmSync(next, { recursive: true, force: true });
    throw err;
  }
  if (fs.existsSync(dist)) fs.renameSync(dist, old);
  fs.renameSync(next, dist);
  fs.rmSync(old, { recursive: true, force: true });
  console.log(`built ${path.relative(process.cwd(), dist) || dist}/`);
}

main().catch((err) => {
  console.error(`build failed: ${err.message}`);
  process.exit(1);
});
