// Test-only credentials for the Worker under test; never used outside the test suite.
export const TEST_SECRETS = {
  ADMIN_TOKEN: "test-admin-token",
  JWT_SECRET: "test-jwt-secret",
} as const;
