// Three projects: `unit` (pure code, no services), `integration` (real PostgreSQL, SSH and HTTP
// servers on loopback) and `e2e` (all of that plus a real Temporal dev server, started once by
// globalSetup).
const swc = ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }];
// openid-client and what it is built on are ES modules only: Node 20.19 requires them natively,
// jest's own module loader does not, so they are compiled to CommonJS like our code.
const ESM_ONLY = ['openid-client', 'oauth4webapi', 'jose'];
const transform = { '^.+\\.ts$': swc, [`/node_modules/(${ESM_ONLY.join('|')})/.+\\.js$`]: swc };
const common = {
  testEnvironment: 'node',
  transform,
  transformIgnorePatterns: [`/node_modules/(?!(${ESM_ONLY.join('|')})/)`],
  moduleFileExtensions: ['ts', 'js', 'json'],
};

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    // Real PostgreSQL, SSH and HTTP servers on loopback; no Temporal. Each file makes its own database.
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      setupFilesAfterEnv: ['<rootDir>/test/support/integrationTimeout.ts'],
    },
    {
      ...common,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/e2e/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/globalSetup.ts',
      globalTeardown: '<rootDir>/test/support/globalTeardown.ts',
      setupFilesAfterEnv: ['<rootDir>/test/support/e2eTimeout.ts'],
    },
  ],
};
