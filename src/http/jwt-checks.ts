// Checks on a user token that hono's verify does not make: one encoding per token, and time
// claims with a clock-skew allowance and a longest lifetime.

const BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const BASE64URL_SEGMENT = /^[A-Za-z0-9_-]+$/;
/** By length mod 4: how many low bits of the last character encode nothing (1 is no valid length). */
const UNUSED_BITS = [0, -1, 4, 2];

/**
 * Canonical base64url: no padding, no other characters, and zero unused bits in the last
 * character. hono accepts `=` padding and atob ignores unused bits, so without this one
 * signed token would have several spellings that all verify.
 */
function isCanonicalBase64Url(segment: string): boolean {
  const unused = UNUSED_BITS[segment.length % 4] as number;
  if (unused < 0 || !BASE64URL_SEGMENT.test(segment)) return false;
  return (BASE64URL.indexOf(segment[segment.length - 1] as string) & ((1 << unused) - 1)) === 0;
}

/** Three canonical base64url segments: header, payload, signature. */
export function isCanonicalJwt(token: string): boolean {
  const segments = token.split(".");
  return segments.length === 3 && segments.every(isCanonicalBase64Url);
}

export interface TokenLifetime {
  /** Allowed difference between the issuer's clock and ours, in seconds. */
  skewSec: number;
  /** The longest a token may still be valid, in seconds from now. */
  maxTtlSec: number;
}

/**
 * Why the token's time claims refuse it, or undefined. `exp` is required; `nbf` and `iat`
 * are checked when present. Each comparison allows `skewSec`, so an issuer whose clock runs
 * a little fast does not lock buyers out at the moment a sale opens.
 */
export function timeClaimProblem(
  claims: { exp?: unknown; nbf?: unknown; iat?: unknown },
  nowSec: number,
  { skewSec, maxTtlSec }: TokenLifetime,
): string | undefined {
  const { exp, nbf, iat } = claims;
  if (exp === undefined) return "the token has no expiry";
  if (typeof exp !== "number" || !Number.isFinite(exp)) return "the token's expiry is not a number";
  if (exp <= nowSec - skewSec) return "the token has expired";
  if (exp - nowSec > maxTtlSec + skewSec) return `the token must expire within ${maxTtlSec} seconds`;
  if (nbf !== undefined && !(typeof nbf === "number" && nbf <= nowSec + skewSec)) return "the token is not valid yet";
  if (iat !== undefined && !(typeof iat === "number" && iat <= nowSec + skewSec)) return "the token was issued in the future";
  return undefined;
}
