// Endpoint signing secrets at rest: sealed in D1 with AES-256-GCM (Web Crypto) under
// ORDER_EVENT_SECRETS_KEY, a Worker secret, so an export or a backup of the database holds no
// secret a shop verifies order events with. Sealed, a secret reads `aes1.<iv>.<ciphertext>`
// (base64url; the ciphertext ends with GCM's tag) and its endpoint's id is the additional data:
// a sealed secret copied into another endpoint's row does not open there.
//
// Secrets written before sealing are plain `whsec_...`: they keep working as they are, and
// keepEndpointSecrets (the cron, every minute) seals them; SQL could not, the key is the
// Worker's. A rotation seals the endpoint's secret first, then keeps it as the previous one.

import { decodeBase64Url, encodeBase64Url } from "hono/utils/encode";

/** The key's bytes, as the settings parse ORDER_EVENT_SECRETS_KEY. */
export type SecretsKey = Uint8Array;

const SEALED = "aes1.";
/** GCM's nonce: 12 random bytes per seal (a key seals a few secrets per endpoint, far from any bound). */
const IV_BYTES = 12;

/** A stored secret that does not open: no key, another key, or not this endpoint's. */
export class SecretUnreadable extends Error {}

const isSealed = (stored: string) => stored.startsWith(SEALED);

const keys = new WeakMap<SecretsKey, Promise<CryptoKey>>();
function aesKey(key: SecretsKey): Promise<CryptoKey> {
  let imported = keys.get(key);
  if (!imported) {
    imported = crypto.subtle.importKey("raw", key, "AES-GCM", false, ["encrypt", "decrypt"]);
    keys.set(key, imported);
  }
  return imported;
}

const additionalData = (endpointId: string) => new TextEncoder().encode(`order-event-endpoint:${endpointId}`);

/** `secret` sealed for `endpointId`. */
export async function sealSecret(key: SecretsKey, endpointId: string, secret: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: additionalData(endpointId) },
    await aesKey(key),
    new TextEncoder().encode(secret),
  );
  return `${SEALED}${encodeBase64Url(iv.buffer)}.${encodeBase64Url(sealed)}`;
}

/** The secret `stored` holds for `endpointId`: a plain one as it is, a sealed one opened; throws SecretUnreadable. */
export async function openSecret(key: SecretsKey | undefined, endpointId: string, stored: string): Promise<string> {
  if (!isSealed(stored)) return stored;
  if (!key) throw new SecretUnreadable("ORDER_EVENT_SECRETS_KEY is not set");
  const [iv, sealed] = stored.slice(SEALED.length).split(".");
  try {
    const plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: decodeBase64Url(iv as string), additionalData: additionalData(endpointId) },
      await aesKey(key),
      decodeBase64Url(sealed as string),
    );
    return new TextDecoder().decode(plain);
  } catch {
    throw new SecretUnreadable("it was sealed with another ORDER_EVENT_SECRETS_KEY, or for another endpoint");
  }
}

interface PlainRow {
  id: string;
  secret: string;
  previous_secret: string | null;
}

/** Secrets stored before sealing, in either column. */
const PLAIN = "substr(secret, 1, 5) != 'aes1.' OR substr(previous_secret, 1, 5) != 'aes1.'";
const SEAL_ROUND = 100;

/**
 * Seals the secrets still in plain text (all of them, or `endpointId`'s), each only if it is
 * unchanged meanwhile (a rotation may have replaced it), and forgets the previous secrets whose
 * grace is over. The cron runs it (without a key it only forgets); a rotation seals first.
 * Returns how many secrets it sealed.
 */
export async function keepEndpointSecrets(
  db: D1Database,
  key: SecretsKey | undefined,
  { endpointId, now = Date.now() }: { endpointId?: string; now?: number } = {},
): Promise<number> {
  if (endpointId === undefined)
    await db
      .prepare("UPDATE event_endpoints SET previous_secret = NULL, previous_secret_until = NULL WHERE previous_secret_until <= ?")
      .bind(now)
      .run();
  if (!key) return 0;
  const { results } = await db
    .prepare(
      `SELECT id, secret, previous_secret FROM event_endpoints WHERE (${PLAIN}) AND (?1 IS NULL OR id = ?1) LIMIT ${SEAL_ROUND}`,
    )
    .bind(endpointId ?? null)
    .all<PlainRow>();
  const statements: D1PreparedStatement[] = [];
  for (const row of results)
    for (const column of ["secret", "previous_secret"] as const) {
      const plain = row[column];
      if (plain === null || isSealed(plain)) continue;
      statements.push(
        db
          .prepare(`UPDATE event_endpoints SET ${column} = ? WHERE id = ? AND ${column} = ?`)
          .bind(await sealSecret(key, row.id, plain), row.id, plain),
      );
    }
  if (statements.length > 0) await db.batch(statements);
  return statements.length;
}
