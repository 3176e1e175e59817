// HS256 user tokens minted inside k6, exactly what the Worker verifies: `sub` is the user
// id, `exp` is required. The secret is the Worker's JWT_SECRET, passed with -e JWT_SECRET=...
import { hmac } from "k6/crypto";
import { b64encode } from "k6/encoding";

const HEADER = b64encode(JSON.stringify({ alg: "HS256", typ: "JWT" }), "rawurl");

/**
 * @param {string} userId
 * @param {string} secret
 * @param {number} [ttlSeconds]
 * @returns {string}
 */
export function mintUserToken(userId, secret, ttlSeconds = 3600) {
  const now = Math.floor(Date.now() / 1000);
  const payload = b64encode(JSON.stringify({ sub: userId, iat: now, exp: now + ttlSeconds }), "rawurl");
  const signature = hmac("sha256", secret, `${HEADER}.${payload}`, "base64rawurl");
  return `${HEADER}.${payload}.${signature}`;
}
