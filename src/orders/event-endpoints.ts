// The shop's endpoints for order events (D1's event_endpoints): registering, changing,
// rotating secrets, which are stored sealed (./endpoint-secrets.ts) and answered only when
// made. Deliveries to them live in ./event-deliveries.ts.

import type { EndpointView, OrderEventType, UpdateEndpointBody } from "../shared/order-events";
import { keepEndpointSecrets, type SecretsKey, sealSecret } from "./endpoint-secrets";

/**
 * How long the secret a rotation replaces still signs: each delivery carries both signatures
 * meanwhile, so the shop's receiver keeps verifying until it has the new one. A day, as long
 * as a delivery's retries last.
 */
export const SECRET_ROTATION_GRACE_MS = 24 * 3_600_000;

interface EndpointRow {
  id: string;
  url: string;
  events: string;
  description: string;
  enabled: number;
  disabled_reason: string | null;
  created_at: number;
  previous_secret_until: number | null;
}

/** Everything an admin may see: never a secret, sealed or not. */
const COLUMNS = "id, url, events, description, enabled, disabled_reason, created_at, previous_secret_until";

const fromRow = (r: EndpointRow, now = Date.now()): EndpointView => ({
  id: r.id,
  url: r.url,
  events: JSON.parse(r.events) as OrderEventType[],
  description: r.description,
  enabled: r.enabled === 1,
  disabledReason: r.disabled_reason,
  createdAt: new Date(r.created_at).toISOString(),
  previousSecretExpiresAt:
    r.previous_secret_until !== null && r.previous_secret_until > now ? new Date(r.previous_secret_until).toISOString() : null,
});

const randomHex = (bytes: number) =>
  [...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");

/** A Standard Webhooks secret: whsec_ and 24 random bytes in base64. */
const newSecret = () => `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(24))))}`;

export async function createEndpoint(
  db: D1Database,
  key: SecretsKey,
  input: { url: string; events: OrderEventType[]; description?: string },
): Promise<EndpointView> {
  const id = `ep_${randomHex(12)}`;
  const secret = newSecret();
  const row = await db
    .prepare(
      `INSERT INTO event_endpoints (id, url, secret, events, description, created_at)
       VALUES (?, ?, ?, ?, ?, ?) RETURNING ${COLUMNS}`,
    )
    .bind(
      id,
      input.url,
      await sealSecret(key, id, secret),
      JSON.stringify([...new Set(input.events)]),
      input.description ?? "",
      Date.now(),
    )
    .first<EndpointRow>();
  return { ...fromRow(row as EndpointRow), secret };
}

export async function listEndpoints(db: D1Database): Promise<EndpointView[]> {
  const { results } = await db.prepare(`SELECT ${COLUMNS} FROM event_endpoints ORDER BY created_at, id`).all<EndpointRow>();
  return results.map(fromRow);
}

/** Changes what is given; enabling again clears why the system disabled it. Undefined when there is no such endpoint. */
export async function updateEndpoint(db: D1Database, id: string, changes: UpdateEndpointBody): Promise<EndpointView | undefined> {
  const row = await db
    .prepare(
      `UPDATE event_endpoints SET
         url = COALESCE(?2, url),
         events = COALESCE(?3, events),
         enabled = COALESCE(?4, enabled),
         disabled_reason = CASE WHEN ?4 IS NULL THEN disabled_reason ELSE NULL END
       WHERE id = ?1 RETURNING ${COLUMNS}`,
    )
    .bind(
      id,
      changes.url ?? null,
      changes.events ? JSON.stringify([...new Set(changes.events)]) : null,
      changes.enabled === undefined ? null : Number(changes.enabled),
    )
    .first<EndpointRow>();
  return row ? fromRow(row) : undefined;
}

/**
 * A new secret, signing from now on; the one it replaces (sealed first, if it was from before
 * sealing) keeps signing beside it for SECRET_ROTATION_GRACE_MS. A rotation within the grace
 * replaces the previous one kept: rotating twice drops a leaked secret at once.
 */
export async function rotateSecret(
  db: D1Database,
  key: SecretsKey,
  id: string,
  now = Date.now(),
): Promise<EndpointView | undefined> {
  await keepEndpointSecrets(db, key, { endpointId: id });
  const secret = newSecret();
  const row = await db
    .prepare(
      `UPDATE event_endpoints SET previous_secret = secret, previous_secret_until = ?1, secret = ?2
       WHERE id = ?3 RETURNING ${COLUMNS}`,
    )
    .bind(now + SECRET_ROTATION_GRACE_MS, await sealSecret(key, id, secret), id)
    .first<EndpointRow>();
  return row ? { ...fromRow(row, now), secret } : undefined;
}

export async function endpointExists(db: D1Database, id: string): Promise<boolean> {
  return (await db.prepare("SELECT 1 FROM event_endpoints WHERE id = ?").bind(id).first()) !== null;
}
