// User tokens for local use and tests: HS256 JWTs with `sub` = user id and an expiry,
// exactly what the Worker verifies. Production tokens come from the shop's identity
// provider, never from a route of this Worker.
import { sign } from "hono/jwt";

export function mintUserToken(userId: string, secret: string, ttlSeconds = 3600): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return sign({ sub: userId, iat: now, exp: now + ttlSeconds }, secret, "HS256");
}
