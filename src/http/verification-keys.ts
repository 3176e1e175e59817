// The keys that verify user tokens, imported once and kept in the isolate: importing a key is
// a good part of a verification's CPU. HS256 tokens are verified with JWT_SECRET; RS256 and
// ES256 tokens from a shop's identity provider with the key of their `kid` in the JWKS at
// JWT_JWKS_URL. hono's verifyWithJwks fetches the set and imports the key on every call, so
// the set is fetched and imported here, and hono's verify checks each token against its key.

/** The asymmetric algorithms accepted from a JWKS; each key is pinned to one of them. */
export type JwksAlgorithm = "RS256" | "ES256";
export interface PinnedKey {
  alg: JwksAlgorithm;
  key: CryptoKey;
}

let hmac: { secret: string; key: Promise<CryptoKey> } | undefined;

export function hmacKey(secret: string): Promise<CryptoKey> {
  if (hmac?.secret !== secret) {
    const key = crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
      "verify",
    ]);
    hmac = { secret, key };
  }
  return hmac.key;
}

const IMPORT_PARAMS: Record<JwksAlgorithm, SubtleCryptoImportKeyAlgorithm> = {
  RS256: { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
  ES256: { name: "ECDSA", namedCurve: "P-256" },
};

/** A key set is kept this long, then fetched again. */
const JWKS_TTL_MS = 10 * 60_000;
/** A token naming a kid the set lacks (a rotation) fetches the set again, at most this often. */
const UNKNOWN_KID_REFETCH_MS = 60_000;
/** After a failed fetch the set is not asked for again this soon: tokens must not hammer the provider. */
const RETRY_AFTER_FAILURE_MS = 5_000;
const JWKS_TIMEOUT_MS = 3_000;

type JsonWebKeyWithId = JsonWebKey & { kid?: unknown };

/**
 * The algorithm a JWK is pinned to: its own `alg`, or the one its type implies. A token
 * must name exactly this algorithm, so no key can be used with another one (alg confusion).
 */
function pinnedAlgorithm(jwk: JsonWebKeyWithId): JwksAlgorithm | undefined {
  if (jwk.use !== undefined && jwk.use !== "sig") return undefined;
  const implied = jwk.kty === "RSA" ? "RS256" : jwk.kty === "EC" && jwk.crv === "P-256" ? "ES256" : undefined;
  return jwk.alg === undefined || jwk.alg === implied ? implied : undefined;
}

async function importKeySet(body: unknown): Promise<Map<string, PinnedKey>> {
  const jwks = (body as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(jwks)) throw new Error("the JWKS has no keys array");
  const keys = new Map<string, PinnedKey>();
  for (const jwk of jwks as JsonWebKeyWithId[]) {
    const alg = typeof jwk?.kid === "string" ? pinnedAlgorithm(jwk) : undefined;
    if (!alg) continue; // keys for other uses or algorithms are not ours to accept
    try {
      keys.set(jwk.kid as string, { alg, key: await crypto.subtle.importKey("jwk", jwk, IMPORT_PARAMS[alg], false, ["verify"]) });
    } catch {
      // a malformed key verifies nothing; the others still do
    }
  }
  return keys;
}

interface KeySet {
  url: string;
  keys: Map<string, PinnedKey>;
  fetchedAt: number;
}
let keySet: KeySet | undefined;
/** A fetch some request is making, until when the others wait for it. */
let fetching: { url: string; until: number } | undefined;
let retryAt = 0;
const WAIT_POLL_MS = 10;

/** Fetches and imports the set from this request's own context. */
async function fetchKeySet(url: string): Promise<void> {
  fetching = { url, until: Date.now() + JWKS_TIMEOUT_MS + 1_000 };
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(JWKS_TIMEOUT_MS), headers: { Accept: "application/json" } });
    if (!res.ok) throw new Error(`the JWKS answered HTTP ${res.status}`);
    keySet = { url, keys: await importKeySet(await res.json()), fetchedAt: Date.now() };
  } catch (err) {
    retryAt = Date.now() + RETRY_AFTER_FAILURE_MS;
    throw err;
  } finally {
    fetching = undefined;
  }
}

/**
 * Waits on this request's own timer while another request fetches the set. Requests share
 * plain data, never a promise: workerd may resume a continuation in the context of the
 * request that settled it, where this request's I/O would be foreign (see merged calls).
 */
async function waitForOtherFetch(url: string): Promise<void> {
  while (fetching?.url === url && Date.now() < fetching.until) await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
}

/**
 * The key of `kid` in the JWKS at `url`, or undefined when the set has none. Throws only
 * when no set could be fetched yet; a set that cannot be refreshed is used as it was. One
 * request fetches at a time; the others wait for it.
 */
export async function jwksKey(url: string, kid: string, now = Date.now()): Promise<PinnedKey | undefined> {
  const known = keySet?.url === url ? keySet : undefined;
  const due =
    !known || now - known.fetchedAt > JWKS_TTL_MS || (!known.keys.has(kid) && now - known.fetchedAt > UNKNOWN_KID_REFETCH_MS);
  if (fetching?.url === url && now < fetching.until) {
    await waitForOtherFetch(url);
  } else if (due && now >= retryAt) {
    try {
      await fetchKeySet(url);
    } catch (err) {
      if (!known) throw err;
    }
  }
  const current = keySet?.url === url ? keySet : undefined;
  if (!current) throw new Error("the JWKS could not be fetched");
  return current.keys.get(kid);
}
