// Test-only credentials for the Worker under test; never used outside the test suite.
export const TEST_SECRETS = {
  ADMIN_TOKEN: "test-admin-token-long-enough-for-the-32-char-rule",
  JWT_SECRET: "test-jwt-secret-long-enough-for-the-32-char-rule",
  PAYMENT_WEBHOOK_SECRET: "test-webhook-secret",
  /** 32 bytes in base64: "test-order-event-secrets-key-32b". */
  ORDER_EVENT_SECRETS_KEY: "dGVzdC1vcmRlci1ldmVudC1zZWNyZXRzLWtleS0zMmI=",
  ORDER_ID_KEY: "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
} as const;
