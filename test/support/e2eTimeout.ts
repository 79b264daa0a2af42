// Jest 30 ignores `testTimeout` inside `projects` entries; e2e tests wait on real builds.
jest.setTimeout(120_000);
