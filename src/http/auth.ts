import type { MiddlewareHandler } from "hono";
import { verify } from "hono/jwt";
import { timingSafeEqual } from "hono/utils/buffer";
import { decodeHeader } from "hono/utils/jwt/jwt";
import { JwtPayloadRequiresAud, JwtTokenAudience, JwtTokenIssuer } from "hono/utils/jwt/types";
import { admit, blockedHere } from "../admission/global-limits";
import { type Settings, settingsOf } from "../shared/settings";
import { userIdProblem } from "../shared/user-id";
import type { AppEnv } from "./app-env";
import { clientAddress } from "./client-address";
import { unauthorized, unavailable } from "./errors";
import { isCanonicalJwt, type TokenLifetime, timeClaimProblem } from "./jwt-checks";
import { refuseUnlessAdmitted } from "./limits";
import { logConfigurationError, usableSecret } from "./secrets";
import { hmacKey, type JwksAlgorithm, jwksKey } from "./verification-keys";

const BEARER = /^Bearer\s+(\S+)$/i;

/**
 * A buyer whose token the identity provider (JWKS) signed is `idp:<sub>`; the shop's own HS256
 * tokens may not name a subject starting so. The two kinds of token therefore never name one
 * buyer, on any route or in any stored record, whatever `sub` either issuer hands out.
 */
export const PROVIDER_USER_PREFIX = "idp:";

/** The lifetime rules of the settings, made once per settings object (an isolate's, as a rule). */
let lifetimeOf: { settings: Settings; lifetime: TokenLifetime } | undefined;
function tokenLifetime(settings: Settings): TokenLifetime {
  if (lifetimeOf?.settings !== settings) {
    lifetimeOf = { settings, lifetime: { skewSec: settings.JWT_CLOCK_SKEW_SEC, maxTtlSec: settings.JWT_MAX_TTL_SEC } };
  }
  return lifetimeOf.lifetime;
}

type TokenHeader = { readonly alg?: unknown; readonly kid?: unknown };
/**
 * The last header read, by its segment: one issuer's tokens carry the same header, so a crowd
 * of new tokens is decoded here once, not once each (hono's verify decodes its own copy).
 */
let lastHeader: { segment: string; header: TokenHeader } | undefined;
function headerOf(token: string): TokenHeader {
  const segment = token.slice(0, token.indexOf("."));
  if (lastHeader?.segment !== segment) {
    let header: unknown;
    try {
      header = decodeHeader(token);
    } catch {
      header = undefined;
    }
    // A header of JSON `null` or `1` is no header either.
    if (typeof header !== "object" || header === null) throw unauthorized("the token is not a well-formed JWT");
    lastHeader = { segment, header: Object.freeze(header) };
  }
  return lastHeader.header;
}

/** The key that verifies `token` and the algorithm it is pinned to, chosen by the token's header. */
async function verificationKeyFor(token: string, settings: Settings): Promise<{ alg: "HS256" | JwksAlgorithm; key: CryptoKey }> {
  const header = headerOf(token);
  const { JWT_JWKS_URL } = settings;
  if (header.alg === "HS256") {
    const secret = usableSecret("JWT_SECRET", settings.JWT_SECRET);
    if (!secret) throw unauthorized("the shop's tokens cannot be verified: this server's JWT_SECRET is not usable");
    return { alg: "HS256", key: await hmacKey(secret) };
  }
  if ((header.alg === "RS256" || header.alg === "ES256") && JWT_JWKS_URL) {
    // Without both, every token the provider ever signed, for any application, would pass.
    if (!settings.JWT_ISSUER || !settings.JWT_AUDIENCE) {
      logConfigurationError("JWT_JWKS_URL", "JWT_ISSUER and JWT_AUDIENCE must both be set to accept its tokens");
      throw unauthorized("the identity provider's tokens are not accepted: its issuer and audience are not configured");
    }
    if (typeof header.kid !== "string") throw unauthorized("the token names no signing key (kid)");
    let pinned: Awaited<ReturnType<typeof jwksKey>>;
    try {
      pinned = await jwksKey(JWT_JWKS_URL, header.kid);
    } catch {
      throw unavailable("the identity provider's signing keys cannot be fetched right now", 5);
    }
    if (!pinned) throw unauthorized("the token's signing key is unknown");
    return pinned; // its alg, not the header's: verify refuses a token naming another one
  }
  throw unauthorized(`tokens must be signed with HS256${JWT_JWKS_URL ? ", RS256 or ES256" : ""}`);
}

/**
 * Verifies the caller's JWT and returns its `sub` as the user id; identity never comes from
 * the request body. HS256 with JWT_SECRET, or RS256/ES256 with the JWKS at JWT_JWKS_URL.
 * `exp` is required and at most JWT_MAX_TTL_SEC away; JWT_CLOCK_SKEW_SEC is allowed on
 * `exp`, `nbf` and `iat`; `iss` and `aud` must match JWT_ISSUER and JWT_AUDIENCE when set
 * (a JWKS token needs both set). A JWKS token's buyer is PROVIDER_USER_PREFIX + `sub`.
 */
export async function userIdFromAuthorization(header: string | undefined, env: Env): Promise<string> {
  const token = header ? BEARER.exec(header)?.[1] : undefined;
  if (!token) throw unauthorized();
  if (!isCanonicalJwt(token)) throw unauthorized("the token is not a well-formed JWT");
  const settings = settingsOf(env);
  const { alg, key } = await verificationKeyFor(token, settings);

  let payload: Awaited<ReturnType<typeof verify>>;
  try {
    payload = await verify(token, key, {
      alg,
      iss: settings.JWT_ISSUER,
      aud: settings.JWT_AUDIENCE,
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

  const timeProblem = timeClaimProblem(payload, Math.floor(Date.now() / 1000), tokenLifetime(settings));
  if (timeProblem) throw unauthorized(timeProblem);

  const { sub } = payload;
  if (typeof sub !== "string") throw unauthorized("the token has no subject");
  const fromProvider = alg !== "HS256";
  if (!fromProvider && sub.startsWith(PROVIDER_USER_PREFIX)) {
    throw unauthorized(`the token's subject may not start with ${PROVIDER_USER_PREFIX}`);
  }
  const userId = fromProvider ? `${PROVIDER_USER_PREFIX}${sub}` : sub;
  const subjectProblem = userIdProblem(userId);
  if (subjectProblem) throw unauthorized(`the token's subject ${subjectProblem}`);
  return userId;
}

export const requireUser: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.set("userId", await userIdFromAuthorization(c.req.header("Authorization"), c.env));
  await next();
};

/**
 * Admin routes need the ADMIN_TOKEN bearer, compared in constant time (hono hashes both sides).
 * Only wrong tokens are counted, per client address across isolates (in Redis); once an address
 * is over its allowance every wrong token from it is refused 429, and so is the right one where
 * this isolate has learned of the block (its ephemeral cache: no Redis command). A wrong token
 * whose count cannot be read is refused 503. The right token needs no Redis at all, so the
 * console keeps working while Redis is out, which is when an operator needs it most. The
 * allowance slows guessing; a long random token (at least 32 characters) is what defeats it.
 */
export const requireAdmin: MiddlewareHandler<{ Bindings: Env }> = async (c, next) => {
  const token = BEARER.exec(c.req.header("Authorization") ?? "")?.[1];
  const expected = usableSecret("ADMIN_TOKEN", settingsOf(c.env).ADMIN_TOKEN);
  if (!expected) throw unavailable("the admin API is not configured: this server's ADMIN_TOKEN is not usable", 60);
  const address = clientAddress(c);
  const right = token !== undefined && (await timingSafeEqual(token, expected));
  const tooMany = "too many failed admin sign-ins from this address";
  if (right) {
    const blocked = blockedHere("admin-auth-failures", address, c.env);
    if (blocked) refuseUnlessAdmitted(blocked, tooMany);
    return next();
  }
  refuseUnlessAdmitted(await admit("admin-auth-failures", address, c.env), tooMany);
  throw unauthorized("the admin token is required");
};
