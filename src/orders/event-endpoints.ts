// The shop's endpoints for order events (D1's event_endpoints): registering, changing,
// rotating secrets. Deliveries to them live in ./event-deliveries.ts.

import type { EndpointView, OrderEventType, UpdateEndpointBody } from "../shared/order-events";

interface EndpointRow {
  id: string;
  url: string;
  events: string;
  description: string;
  enabled: number;
  disabled_reason: string | null;
  created_at: number;
}

const COLUMNS = "id, url, events, description, enabled, disabled_reason, created_at";

const fromRow = (r: EndpointRow): EndpointView => ({
  id: r.id,
  url: r.url,
  events: JSON.parse(r.events) as OrderEventType[],
  description: r.description,
  enabled: r.enabled === 1,
  disabledReason: r.disabled_reason,
  createdAt: new Date(r.created_at).toISOString(),
});

const randomHex = (bytes: number) =>
  [...crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");

/** A Standard Webhooks secret: whsec_ and 24 random bytes in base64. */
const newSecret = () => `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(24))))}`;

export async function createEndpoint(
  db: D1Database,
  input: { url: string; events: OrderEventType[]; description?: string },
): Promise<EndpointView> {
  const secret = newSecret();
  const row = await db
    .prepare(
      `INSERT INTO event_endpoints (id, url, secret, events, description, created_at)
       VALUES (?, ?, ?, ?, ?, ?) RETURNING ${COLUMNS}`,
    )
    .bind(
      `ep_${randomHex(12)}`,
      input.url,
      secret,
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

/** A new secret, at once: deliveries sent from now on are signed with it. */
export async function rotateSecret(db: D1Database, id: string): Promise<EndpointView | undefined> {
  const secret = newSecret();
  const row = await db
    .prepare(`UPDATE event_endpoints SET secret = ? WHERE id = ? RETURNING ${COLUMNS}`)
    .bind(secret, id)
    .first<EndpointRow>();
  return row ? { ...fromRow(row), secret } : undefined;
}

export async function endpointExists(db: D1Database, id: string): Promise<boolean> {
  return (await db.prepare("SELECT 1 FROM event_endpoints WHERE id = ?").bind(id).first()) !== null;
}
