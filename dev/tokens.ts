// Dev and test user tokens: HS256 JWTs with `sub` = user id and an expiry, exactly what the
// Worker verifies. Production tokens come from your identity provider, never from a route.
import { sign } from "hono/jwt";

export const DEV_SECRETS = {
  ADMIN_TOKEN: "dev-admin-token",
  JWT_SECRET: "dev-jwt-secret-change-me",
  UPSTASH_REDIS_REST_TOKEN: "dev-gateway-token",
} as const;

export function mintUserToken(userId: string, secret: string, ttlSeconds = 3600): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return sign({ sub: userId, iat: now, exp: now + ttlSeconds }, secret, "HS256");
}
