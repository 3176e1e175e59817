// Test-only credentials for the Worker under test; never used outside the test suite.
export const TEST_SECRETS = {
  ADMIN_TOKEN: "test-admin-token",
  JWT_SECRET: "test-jwt-secret",
  PAYMENT_WEBHOOK_SECRET: "test-webhook-secret",
} as const;
