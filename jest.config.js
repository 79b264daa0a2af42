// Three projects: `unit` (pure code, no services), `integration` (real PostgreSQL, SSH and HTTP
// servers on loopback) and `e2e` (all of that plus a real Temporal dev server, started once by
// globalSetup).
const transform = { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }] };
const common = { testEnvironment: 'node', transform, moduleFileExtensions: ['ts', 'js', 'json'] };

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
