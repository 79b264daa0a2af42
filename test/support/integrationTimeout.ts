// Jest 30 ignores `testTimeout` inside `projects` entries; integration tests start real servers.
jest.setTimeout(60_000);
