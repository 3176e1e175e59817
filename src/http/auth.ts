import type { MiddlewareHandler } from "hono";
import { verify } from "hono/jwt";
import { timingSafeEqual } from "hono/utils/buffer";
import { decodeHeader } from "hono/utils/jwt/jwt";
import { JwtPayloadRequiresAud, JwtTokenAudience, JwtTokenIssuer } from "hono/utils/jwt/types";
import { userIdProblem } from "../shared/user-id";
import { unauthorized, unavailable } from "./errors";
import { isCanonicalJwt, type TokenLifetime, timeClaimProblem } from "./jwt-checks";
import { hmacKey, type JwksAlgorithm, jwksKey } from "./verification-keys";

export type UserVariables = { userId: string };

const BEARER = /^Bearer\s+(\S+)$/i;

const DEFAULT_LIFETIME: TokenLifetime = { skewSec: 30, maxTtlSec: 86_400 };

/** A non-negative whole number from a var, or the default when it is unset or not one. */
function seconds(value: string | undefined, fallback: number): number {
  const n = Number(value);
  return value !== undefined && value !== "" && Number.isInteger(n) && n >= 0 ? n : fallback;
}

/** The key that verifies `token` and the algorithm it is pinned to, chosen by the token's header. */
async function verificationKeyFor(token: string, env: Env): Promise<{ alg: "HS256" | JwksAlgorithm; key: CryptoKey }> {
  let header: { alg?: unknown; kid?: unknown };
  try {
    header = decodeHeader(token);
  } catch {
    throw unauthorized("the token is not a well-formed JWT");
  }
  if (header.alg === "HS256") return { alg: "HS256", key: await hmacKey(env.JWT_SECRET) };
  if ((header.alg === "RS256" || header.alg === "ES256") && env.JWT_JWKS_URL) {
    if (typeof header.kid !== "string") throw unauthorized("the token names no signing key (kid)");
    let pinned: Awaited<ReturnType<typeof jwksKey>>;
    try {
      pinned = await jwksKey(env.JWT_JWKS_URL, header.kid);
    } catch {
      throw unavailable("the identity provider's signing keys cannot be fetched right now", 5);
    }
    if (!pinned) throw unauthorized("the token's signing key is unknown");
    return pinned; // its alg, not the header's: verify refuses a token naming another one
  }
  throw unauthorized(`tokens must be signed with HS256${env.JWT_JWKS_URL ? ", RS256 or ES256" : ""}`);
}

/**
 * Verifies the caller's JWT and returns its `sub` as the user id; identity never comes from
 * the request body. HS256 with JWT_SECRET, or RS256/ES256 with the JWKS at JWT_JWKS_URL.
 * `exp` is required and at most JWT_MAX_TTL_SEC away; JWT_CLOCK_SKEW_SEC is allowed on
 * `exp`, `nbf` and `iat`; `iss` and `aud` must match JWT_ISSUER and JWT_AUDIENCE when set.
 */
export async function userIdFromAuthorization(header: string | undefined, env: Env): Promise<string> {
  const token = header ? BEARER.exec(header)?.[1] : undefined;
  if (!token) throw unauthorized();
  if (!isCanonicalJwt(token)) throw unauthorized("the token is not a well-formed JWT");
  const { alg, key } = await verificationKeyFor(token, env);

  let payload: Awaited<ReturnType<typeof verify>>;
  try {
    payload = await verify(token, key, {
      alg,
      iss: env.JWT_ISSUER || undefined,
      aud: env.JWT_AUDIENCE || undefined,
      // Checked below, with the clock-skew allowance hono's verify does not have.
      exp: false,
      nbf: false,
      iat: false,
    });
  } catch (err) {
    if (err instanceof JwtTokenIssuer) throw unauthorized("the token's issuer is not accepted");
    if (err instanceof JwtTokenAudience || err instanceof JwtPayloadRequiresAud) {
      throw unauthorized("the token's audience is not accepted");
    }
    throw unauthorized("the token is invalid");
  }

  const lifetime = {
    skewSec: seconds(env.JWT_CLOCK_SKEW_SEC, DEFAULT_LIFETIME.skewSec),
    maxTtlSec: seconds(env.JWT_MAX_TTL_SEC, DEFAULT_LIFETIME.maxTtlSec),
  };
  const timeProblem = timeClaimProblem(payload, Math.floor(Date.now() / 1000), lifetime);
  if (timeProblem) throw unauthorized(timeProblem);

  const { sub } = payload;
  if (typeof sub !== "string") throw unauthorized("the token has no subject");
  const subjectProblem = userIdProblem(sub);
  if (subjectProblem) throw unauthorized(`the token's subject ${subjectProblem}`);
  return sub;
}

export const requireUser: MiddlewareHandler<{ Bindings: Env; Variables: UserVariables }> = async (c, next) => {
  c.set("userId", await userIdFromAuthorization(c.req.header("Authorization"), c.env));
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
