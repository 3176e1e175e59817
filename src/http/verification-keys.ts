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
let loading: { url: string; promise: Promise<KeySet> } | undefined;
let retryAt = 0;

/** Fetches and imports the set, once at a time: concurrent callers share the one fetch. */
function fetchKeySet(url: string): Promise<KeySet> {
  if (loading?.url !== url) {
    const promise = fetch(url, { signal: AbortSignal.timeout(JWKS_TIMEOUT_MS), headers: { Accept: "application/json" } })
      .then(async (res) => {
        if (!res.ok) throw new Error(`the JWKS answered HTTP ${res.status}`);
        keySet = { url, keys: await importKeySet(await res.json()), fetchedAt: Date.now() };
        return keySet;
      })
      .catch((err: unknown) => {
        retryAt = Date.now() + RETRY_AFTER_FAILURE_MS;
        throw err;
      })
      .finally(() => {
        if (loading?.promise === promise) loading = undefined;
      });
    loading = { url, promise };
  }
  return loading.promise;
}

/**
 * The key of `kid` in the JWKS at `url`, or undefined when the set has none. Rejects only
 * when no set could be fetched yet; a set that cannot be refreshed is used as it was.
 */
export async function jwksKey(url: string, kid: string, now = Date.now()): Promise<PinnedKey | undefined> {
  const known = keySet?.url === url ? keySet : undefined;
  const due =
    !known || now - known.fetchedAt > JWKS_TTL_MS || (!known.keys.has(kid) && now - known.fetchedAt > UNKNOWN_KID_REFETCH_MS);
  if (loading?.url === url || (due && now >= retryAt)) {
    try {
      return (await fetchKeySet(url)).keys.get(kid);
    } catch (err) {
      if (!known) throw err;
    }
  } else if (!known) {
    throw new Error("the JWKS could not be fetched recently");
  }
  return known.keys.get(kid);
}
