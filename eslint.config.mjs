import { builtinModules } from 'node:module';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

// ---- The layers, held by lint (docs/architecture.md has the map) ----
// Each folder of src/ may import only what its layer allows. Type-only imports cross freely:
// they are erased, so they carry no code and no I/O across a boundary.

/** Node built-ins, bare (`fs`) and prefixed (`node:fs`). */
const NODE_BUILTINS = builtinModules.filter((m) => !m.startsWith('_'));
/** Libraries that do I/O or speak to a service. */
const IO_LIBRARIES = ['pg', 'undici', 'fastify', 'ssh2', 'nodemailer', 'tinyglobby', 'mysql2', 'mysql2/promise', 'ioredis', 'tar', '@aws-sdk/client-s3'];
const TEMPORAL = ['@temporalio/activity', '@temporalio/client', '@temporalio/common', '@temporalio/worker', '@temporalio/workflow'];
// A folder's pattern matches the tail of any import: `**/api` would also ban `@opentelemetry/api`, which is no folder of src/.
const folder = (name) => [`**/${name}`, `**/${name}/**`, '!@opentelemetry/**'];

/**
 * One layer's rule. `banned` package names and `folders` of src/ it must not import (values;
 * `import type` is allowed), each with the reason lint prints.
 */
function layer({ packages = [], patterns = [], folders = [], why }) {
  return [
    'error',
    {
      paths: packages.map((name) => ({ name, message: why, allowTypeImports: true })),
      patterns: [
        ...patterns.map((p) => ({ group: [p].flat(), message: why, allowTypeImports: true })),
        ...folders.map((f) => ({ group: folder(f), message: why, allowTypeImports: true })),
      ],
    },
  ];
}

const PURE = {
  packages: [...IO_LIBRARIES, ...TEMPORAL, 'prom-client', ...NODE_BUILTINS.filter((m) => m !== 'crypto')],
  patterns: [['node:*', '!node:crypto']],
  folders: ['db', 'api', 'activities', 'steps', 'delivery', 'sites', 'store', 'workflows', 'temporal', 'worker', 'runner', 'metrics'],
};

export const layers = [
  {
    files: ['src/metrics/**/*.ts'],
    rule: layer({
      packages: [...IO_LIBRARIES, ...TEMPORAL],
      folders: ['db', 'api', 'activities', 'steps', 'delivery', 'sites', 'store', 'workflows', 'temporal', 'worker', 'runner', 'providers'],
      why: "metrics are counters every layer may touch: prom-client and its listener (node:http) only; what needs PostgreSQL or Temporal is handed in by the roles (setInstallationSource, temporal/metrics.ts)",
    }),
  },
  {
    files: ['src/workflows/**/*.ts'],
    rule: layer({
      packages: [...NODE_BUILTINS, ...IO_LIBRARIES, 'yaml', 'zod', 'prom-client', '@temporalio/activity', '@temporalio/client', '@temporalio/worker'],
      patterns: ['node:*', '**/core/sluiceYml', '**/core/buildSetupSchema'],
      folders: ['activities', 'steps', 'db', 'delivery', 'sites', 'store', 'api', 'providers', 'worker', 'runner', 'metrics'],
      why: 'workflow code is deterministic and replayed: no Node built-ins, no parsing libraries (yaml, zod), no I/O, no metrics (a replay would count again); activities do that and workflows import only their types',
    }),
  },
  {
    files: ['src/core/**/*.ts'],
    rule: layer({ ...PURE, folders: [...PURE.folders, 'providers'], why: 'the core is pure: no I/O, no Temporal, no other layer (types excepted)' }),
  },
  {
    files: ['src/providers/**/*.ts'],
    rule: layer({ ...PURE, why: 'providers are pure adapters: no I/O, no Temporal, nothing but core (types excepted)' }),
  },
  {
    files: ['src/db/**/*.ts'],
    rule: layer({
      packages: ['undici', 'fastify', 'ssh2', 'nodemailer', ...TEMPORAL],
      folders: ['api', 'activities', 'steps', 'delivery', 'sites', 'workflows', 'providers', 'temporal', 'worker', 'runner'],
      why: 'the data layer runs SQL and nothing else: no HTTP, no Temporal, no other layer (types excepted)',
    }),
  },
  {
    files: ['src/delivery/**/*.ts'],
    rule: layer({
      packages: ['pg', 'fastify', 'ssh2', ...TEMPORAL],
      folders: ['api', 'activities', 'steps', 'workflows', 'temporal', 'worker', 'runner'],
      why: 'delivery is a domain module the API and activities share: its SQL is in db/, and it knows nothing of Temporal or Fastify',
    }),
  },
  {
    files: ['src/sites/**/*.ts'],
    rule: layer({
      packages: ['pg', 'fastify', 'ssh2', ...TEMPORAL],
      folders: ['api', 'app', 'activities', 'steps', 'db', 'store', 'workflows', 'temporal', 'worker', 'runner'],
      why: "a site's folder speaks that hosting site's API over the outgoing webhooks' guarded HTTP (delivery/send.ts) and nothing else: no SQL, no Temporal, no HTTP routes",
    }),
  },
  {
    files: ['src/api/**/*.ts'],
    rule: layer({
      packages: ['pg', '@temporalio/activity', '@temporalio/worker', '@temporalio/workflow'],
      folders: ['activities', 'steps', 'workflows', 'worker', 'runner'],
      why: 'the API runs no activity or workflow code and no SQL of its own: it calls db/, delivery/ and temporal/',
    }),
  },
  // The two HTTP front ends over the application layer: each does only HTTP (parse, map refusals
  // to status codes, render), so neither reaches past app/ into the data layer, nor into the other.
  {
    files: ['src/api/routes/**/*.ts'],
    rule: layer({
      packages: ['pg', '@temporalio/activity', '@temporalio/worker', '@temporalio/workflow'],
      folders: ['activities', 'steps', 'workflows', 'worker', 'runner', 'db', 'web'],
      why: 'the JSON routes are HTTP over the application layer: they call app/ (which calls db/), never SQL or the data layer, and never the web pages',
    }),
  },
  {
    files: ['src/api/web/**/*.ts'],
    rule: layer({
      packages: ['pg', '@temporalio/activity', '@temporalio/worker', '@temporalio/workflow'],
      // `./routes` is the web scope's own registration file; the JSON routes are `../routes`.
      patterns: ['**/api/routes', '**/api/routes/**', '../routes', '../routes/**'],
      folders: ['activities', 'steps', 'workflows', 'worker', 'runner', 'db'],
      why: 'the web pages are HTTP over the application layer: they call app/ (which calls db/), never the data layer, and never the JSON routes',
    }),
  },
  {
    files: ['src/activities/**/*.ts'],
    rule: layer({
      packages: ['pg', 'fastify', '@temporalio/workflow', '@temporalio/client'],
      folders: ['api', 'workflows', 'worker', 'runner'],
      why: 'activities are thin wrappers over db/, delivery/ and the build steps: no SQL of their own, no HTTP API, no workflow code',
    }),
  },
  {
    files: ['src/store/**/*.ts'],
    rule: layer({
      packages: ['pg', 'fastify', ...TEMPORAL],
      folders: ['api', 'activities', 'steps', 'db', 'delivery', 'sites', 'workflows', 'temporal', 'worker', 'runner'],
      why: 'the blob store keeps bytes under keys and nothing else: no SQL, no Temporal, no HTTP routes',
    }),
  },
  {
    files: ['src/steps/**/*.ts'],
    rule: layer({
      packages: ['fastify', ...TEMPORAL],
      folders: ['api', 'activities', 'workflows', 'temporal', 'worker', 'runner', 'delivery', 'sites', 'db', 'crypto'],
      why: "the runner's build steps know nothing of Temporal, HTTP routes, workflows or the database: activities wrap them, and they read and write builds through BuildRecords (steps/records.ts), never SQL or Sluice's secret key",
    }),
  },
  {
    files: ['src/app/**/*.ts'],
    rule: layer({
      packages: ['fastify', '@temporalio/activity', '@temporalio/worker', '@temporalio/workflow'],
      folders: ['api', 'activities', 'steps', 'workflows', 'worker', 'runner'],
      why: 'the application layer decides (validates, checks, calls db/ and delivery/) and knows nothing of HTTP: the JSON API and the web pages call it',
    }),
  },
  {
    files: ['src/ip/**/*.ts', 'src/crypto/**/*.ts'],
    rule: layer({
      packages: [...IO_LIBRARIES, ...TEMPORAL, 'prom-client'],
      folders: ['core', 'providers', 'db', 'api', 'activities', 'steps', 'delivery', 'sites', 'store', 'workflows', 'temporal', 'worker', 'runner', 'metrics'],
      why: "ip/ (addresses and ranges) and crypto/ (sealing, hashing, comparing) are leaves every layer may use: Node's net and crypto, nothing of Sluice's",
    }),
  },
  {
    files: ['src/cli/**/*.ts'],
    rule: layer({
      packages: ['pg', 'fastify', 'ssh2', 'nodemailer', 'mysql2', 'mysql2/promise', 'ioredis', 'tar', '@aws-sdk/client-s3', ...TEMPORAL],
      // src/config.ts reads the server's environment (DATABASE_URL, SLUICE_SECRET_KEY): not the client's.
      patterns: ['../config', '../../config'],
      folders: ['api', 'db', 'temporal', 'activities', 'steps', 'workflows', 'worker', 'runner', 'delivery', 'sites', 'store', 'crypto', 'ssh', 'providers'],
      why: 'the command-line client speaks HTTP to the API and nothing else: no SQL, no Temporal, no server code or configuration (core and zod are fine)',
    }),
  },
];

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.dist-*/', 'coverage/', '.data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node, ...globals.jest } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-properties': ['error', { object: 'it', property: 'only' }, { object: 'describe', property: 'only' }, { object: 'test', property: 'only' }],
    },
  },
  ...layers.map(({ files, rule }) => ({ files, rules: { '@typescript-eslint/no-restricted-imports': rule } })),
  {
    // All SQL is in src/db: a `.query(...)` call anywhere else in src/ is SQL that escaped it.
    files: ['src/**/*.ts'],
    ignores: ['src/db/**'],
    rules: {
      'no-restricted-syntax': ['error', { selector: "CallExpression > MemberExpression.callee[property.name='query']", message: 'SQL belongs in src/db (the data layer); call a function there' }],
    },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Scripts the web pages load: they run in the browser.
    files: ['src/api/web/assets/**/*.js'],
    languageOptions: { globals: { ...globals.browser } },
  },
);
