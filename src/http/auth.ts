import type { MiddlewareHandler } from "hono";
import { verify } from "hono/jwt";
import { timingSafeEqual } from "hono/utils/buffer";
import { MAX_USER_ID_LENGTH } from "../shared/limits";
import { unauthorized } from "./errors";

export type UserVariables = { userId: string };

const BEARER = /^Bearer\s+(\S+)$/i;

// Importing the HMAC key is a good part of a verification's CPU; do it once per isolate.
let cachedKey: { secret: string; key: Promise<CryptoKey> } | undefined;
function hmacKey(secret: string): Promise<CryptoKey> {
  if (cachedKey?.secret !== secret) {
    const key = crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
      "verify",
    ]);
    cachedKey = { secret, key };
  }
  return cachedKey.key;
}

/**
 * Verifies the caller's HS256 JWT (secret JWT_SECRET) and exposes its `sub` as the user id.
 * Identity never comes from the request body. `exp` is required, not merely checked when present.
 */
export async function userIdFromAuthorization(header: string | undefined, secret: string): Promise<string> {
  const token = header ? BEARER.exec(header)?.[1] : undefined;
  if (!token) throw unauthorized();
  let payload: Awaited<ReturnType<typeof verify>>;
  try {
    payload = await verify(token, await hmacKey(secret), "HS256");
  } catch {
    throw unauthorized("the token is invalid or expired");
  }
  const { sub, exp } = payload;
  if (typeof exp !== "number") throw unauthorized("the token has no expiry");
  if (typeof sub !== "string" || sub.length === 0 || sub.length > MAX_USER_ID_LENGTH) {
    throw unauthorized("the token has no usable subject");
  }
  return sub;
}

export const requireUser: MiddlewareHandler<{ Bindings: Env; Variables: UserVariables }> = async (c, next) => {
  c.set("userId", await userIdFromAuthorization(c.req.header("Authorization"), c.env.JWT_SECRET));
  await next();
};

/** Admin routes need the ADMIN_TOKEN bearer, compared in constant time (hono hashes both sides). */
export const requireAdmin: MiddlewareHandler<{ Bindings: Env }> = async (c, next) => {
  const token = BEARER.exec(c.req.header("Authorization") ?? "")?.[1];
  const expected = c.env.ADMIN_TOKEN;
  if (!token || !expected || !(await timingSafeEqual(token, expected))) {
    throw unauthorized("the admin token is required");
  }
  await next();
};
