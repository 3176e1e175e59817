// Delivering order events: the outbox (order_events, written by D1 triggers in the statement
// that changes an order or a sale) fanned out to one delivery per subscribed endpoint, sent
// from the jobs queue, signed per the Standard Webhooks specification. At least once, with
// the event's id as webhook-id on every attempt; per endpoint, the events of one order (or
// sale) go in the order they happened: a delivery waits while an earlier one of its subject
// is still pending.

import { decodeBase64, encodeBase64 } from "hono/utils/encode";
import { log } from "../shared/log";
import type { JobMessage } from "../shared/messages";
import type { DeliveryPage, DeliveryView, OrderEventType } from "../shared/order-events";
import type { OrderIdCipher } from "../shared/public-order-id";
import { openSecret, type SecretsKey, SecretUnreadable } from "./endpoint-secrets";
import { orderView, viewsInTurn } from "./order-views";

/**
 * Seconds to wait after each failed attempt: retries for about a day (85,355 s), then the
 * delivery is failed (and shown as such) and later events of its subject go on.
 */
export const RETRY_SCHEDULE_SEC = [5, 30, 120, 600, 1800, 3600, 7200, 14_400, 28_800, 28_800];
/** How long a sender holds the deliveries it took; a crashed sender's come back after it. */
const LEASE_MS = 60_000;
/** The endpoint has this long to answer one attempt. */
const SEND_TIMEOUT_MS = 15_000;
/** Deliveries taken per round; a run takes rounds until none is due. */
const ROUND_SIZE = 50;
const MAX_ROUNDS = 20;
const DELIVERY_PAGE_SIZE = 50;
const MAX_ERROR_LENGTH = 300;

export interface DeliveryOptions {
  /** ORDER_EVENT_SECRETS_KEY, which opens the endpoints' sealed secrets. */
  secretsKey: SecretsKey | undefined;
  /** How requests reach the endpoints. @default globalThis.fetch */
  fetch?: typeof fetch;
  /** The order ids the bodies carry: public ones. */
  ids: OrderIdCipher;
}

interface DueRow {
  id: string;
  endpoint_id: string;
  attempts: number;
  url: string;
  secret: string;
  /** The secret the last rotation replaced, while it still signs. */
  previous_secret: string | null;
  event_id: string;
  type: OrderEventType;
  snapshot: string;
  created_at: number;
  /** The sale's name and the variant's label as they read when the event is sent (an order event's). */
  sale_name: string;
  variant_label: string | null;
}

/** Sendable: pending, to an enabled endpoint (a disabled one's wait until it is enabled again). */
const SENDABLE = "d.status = 'pending' AND d.endpoint_id IN (SELECT id FROM event_endpoints WHERE enabled = 1)";

/** Sendable, due, not held by a sender, and the earliest pending one of its subject at its endpoint. */
const DUE = `${SENDABLE} AND d.next_attempt_at <= ?1 AND d.lease_until <= ?1
  AND NOT EXISTS (SELECT 1 FROM event_deliveries p WHERE p.endpoint_id = d.endpoint_id AND p.subject = d.subject
                  AND p.event_seq < d.event_seq AND p.status = 'pending')`;

/** Takes up to ROUND_SIZE due deliveries (at most one per endpoint and subject) for LEASE_MS. */
async function takeDue(db: D1Database, now: number): Promise<DueRow[]> {
  // The lease's end, made unlikely to equal another sender's, names what this one took.
  const leaseUntil = now + LEASE_MS + Math.floor(Math.random() * 1000);
  const [, taken] = await db.batch<DueRow>([
    db
      .prepare(
        `UPDATE event_deliveries SET lease_until = ?2
         WHERE id IN (SELECT d.id FROM event_deliveries d WHERE ${DUE} ORDER BY d.event_seq LIMIT ${ROUND_SIZE})`,
      )
      .bind(now, leaseUntil),
    db
      .prepare(
        `SELECT d.id, d.endpoint_id, d.attempts, e.url, e.secret,
           CASE WHEN e.previous_secret_until > ?2 THEN e.previous_secret END AS previous_secret,
           v.id AS event_id, v.type, v.snapshot, v.created_at, s.name AS sale_name, sv.label AS variant_label
         FROM event_deliveries d JOIN event_endpoints e ON e.id = d.endpoint_id JOIN order_events v ON v.seq = d.event_seq
           JOIN sales s ON s.id = v.sale_id LEFT JOIN sale_variants sv ON sv.sale_id = v.sale_id AND sv.variant_id = v.snapshot ->> '$.variant'
         WHERE d.status = 'pending' AND d.lease_until = ?1`,
      )
      .bind(leaseUntil, now),
  ]);
  return taken?.results ?? [];
}

interface SaleSnapshot {
  sale_id: number;
  name: string;
  stock: number;
  sold: number;
  state: string;
  starts_at: number;
  ends_at: number;
}

const saleView = (s: SaleSnapshot) => ({
  saleId: String(s.sale_id),
  name: s.name,
  stock: s.stock,
  sold: s.sold,
  state: s.state,
  startsAt: new Date(s.starts_at).toISOString(),
  endsAt: new Date(s.ends_at).toISOString(),
});

/**
 * The event body: {id, type, createdAt, data: {order} | {sale}}, the order as GET
 * /api/orders/:orderId shows it (its public id; the sale's name and the variant's label as
 * they read now: the snapshot D1's trigger took holds neither).
 */
async function eventBody(row: DueRow, ids: OrderIdCipher): Promise<string> {
  const snapshot = JSON.parse(row.snapshot);
  const data = row.type.startsWith("sale.")
    ? { sale: saleView(snapshot) }
    : { order: await orderView({ ...snapshot, sale_name: row.sale_name, variant_label: row.variant_label }, ids) };
  return JSON.stringify({ id: row.event_id, type: row.type, createdAt: new Date(row.created_at).toISOString(), data });
}

/**
 * The Standard Webhooks signature of a delivery: `v1,` and the base64 HMAC-SHA256 of
 * `<webhook-id>.<webhook-timestamp>.<body>`, keyed by the secret's bytes (the base64 after
 * `whsec_`), as the specification's libraries sign (the tests verify with standardwebhooks).
 */
async function signature(secret: string, id: string, timestampSec: number, body: string): Promise<string> {
  const base64 = secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret;
  const key = await crypto.subtle.importKey("raw", decodeBase64(base64), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${id}.${timestampSec}.${body}`));
  return `v1,${encodeBase64(mac)}`;
}

/**
 * The endpoint's secrets that sign a delivery, opened once per sender run however many of its
 * deliveries go: its own (one that cannot be opened fails the attempt), and during a
 * rotation's grace the one it replaced, left out when it cannot be opened (a rotation after
 * ORDER_EVENT_SECRETS_KEY changed keeps a secret sealed with the old key: the new one signs).
 */
function signingSecrets(key: SecretsKey | undefined) {
  const opened = new Map<string, Promise<string[]>>();
  const unreadable = (endpointId: string, which: string) => (err: unknown) => {
    log.error(`order events: an endpoint's ${which} signing secret cannot be read`, { endpointId }, err);
    throw err;
  };
  return (row: DueRow): Promise<string[]> => {
    const cacheKey = `${row.endpoint_id}\n${row.secret}\n${row.previous_secret}`;
    let secrets = opened.get(cacheKey);
    if (!secrets) {
      const current = openSecret(key, row.endpoint_id, row.secret).catch(unreadable(row.endpoint_id, "current"));
      const previous =
        row.previous_secret === null
          ? undefined
          : openSecret(key, row.endpoint_id, row.previous_secret)
              .catch(unreadable(row.endpoint_id, "replaced"))
              .catch(() => undefined);
      secrets = Promise.all([current, previous]).then((both) => both.filter((s) => s !== undefined));
      opened.set(cacheKey, secrets);
    }
    return secrets;
  };
}

interface Outcome {
  status: number | null;
  error: string | null;
}

/**
 * One attempt, signed with every secret that signs (Standard Webhooks: space-separated `v1,`
 * values, any of which verifies). A secret that cannot be opened sends nothing: the attempt
 * is recorded with why, and retried on the schedule.
 */
async function send(row: DueRow, secrets: Promise<string[]>, fetcher: typeof fetch, ids: OrderIdCipher): Promise<Outcome> {
  const body = await eventBody(row, ids);
  const sentAtSec = Math.floor(Date.now() / 1000);
  let signatures: string[];
  try {
    signatures = await Promise.all((await secrets).map((secret) => signature(secret, row.event_id, sentAtSec, body)));
  } catch (err) {
    const why = err instanceof SecretUnreadable ? err.message : String(err);
    return { status: null, error: `not sent: the endpoint's signing secret cannot be read (${why})`.slice(0, MAX_ERROR_LENGTH) };
  }
  try {
    const res = await fetcher(row.url, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "webhook-id": row.event_id,
        "webhook-timestamp": String(sentAtSec),
        "webhook-signature": signatures.join(" "),
      },
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
    });
    await res.body?.cancel();
    return { status: res.status, error: res.ok ? null : `answered ${res.status}` };
  } catch (err) {
    return { status: null, error: String(err instanceof Error ? err.message : err).slice(0, MAX_ERROR_LENGTH) };
  }
}

/** Records one attempt: delivered (2xx), retried later, failed (schedule spent), or its endpoint disabled (410). */
function recordAttempt(db: D1Database, row: DueRow, outcome: Outcome, now: number): D1PreparedStatement[] {
  const attempts = row.attempts + 1;
  const delivered = outcome.status !== null && outcome.status >= 200 && outcome.status < 300;
  const gone = outcome.status === 410;
  const delay = RETRY_SCHEDULE_SEC[attempts - 1];
  const status = delivered ? "delivered" : gone || delay === undefined ? "failed" : "pending";
  const statements = [
    db
      .prepare("INSERT INTO delivery_attempts (delivery_id, attempted_at, status_code, error) VALUES (?, ?, ?, ?)")
      .bind(row.id, now, outcome.status, outcome.error),
    db
      .prepare(
        `UPDATE event_deliveries SET status = ?2, attempts = ?3, last_status = ?4, last_error = ?5, next_attempt_at = ?6,
           lease_until = 0, updated_at = ?7 WHERE id = ?1`,
      )
      .bind(row.id, status, attempts, outcome.status, outcome.error, now + (delay ?? 0) * 1000, now),
  ];
  if (gone)
    statements.push(
      db
        .prepare("UPDATE event_endpoints SET enabled = 0, disabled_reason = ? WHERE id = ?")
        .bind("the endpoint answered 410 Gone", row.endpoint_id),
    );
  return statements;
}

/**
 * Sends every due delivery, round after round, until none is due. Returns how many attempts
 * it made and when the next sendable delivery falls due (epoch ms), if any does.
 */
export async function deliverDue(db: D1Database, { secretsKey, fetch: fetcher = fetch, ids }: DeliveryOptions) {
  let attempted = 0;
  const secretsOf = signingSecrets(secretsKey);
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const due = await takeDue(db, Date.now());
    if (due.length === 0) break;
    const outcomes = await Promise.all(due.map((row) => send(row, secretsOf(row), fetcher, ids)));
    const now = Date.now();
    await db.batch(due.flatMap((row, i) => recordAttempt(db, row, outcomes[i] as Outcome, now)));
    attempted += due.length;
  }
  const next = await db
    .prepare(`SELECT MIN(d.next_attempt_at) AS at FROM event_deliveries d WHERE ${SENDABLE}`)
    .first<{ at: number | null }>();
  return { attempted, nextDueAt: next?.at ?? null };
}

/** Sales whose window closed this long ago at most are reported as ended (older ones were before events existed). */
const ENDED_LOOKBACK_MS = 24 * 3600_000;

/**
 * Raises sale.ended, once, for the sales whose window has closed (a cancelled sale's is raised
 * by the cancel itself). The cron runs it; returns how many it raised.
 */
export async function reportEndedSales(db: D1Database, now = Date.now()): Promise<number> {
  const { meta } = await db
    .prepare(
      `INSERT INTO order_events (id, type, subject, sale_id, snapshot, created_at)
       SELECT 'evt_' || lower(hex(randomblob(12))), 'sale.ended', 'sale:' || s.id, s.id, v.snapshot, ?1
       FROM sales s JOIN sale_snapshots v ON v.sale_id = s.id
       WHERE s.ends_at <= ?1 AND s.ends_at > ?2
         AND NOT EXISTS (SELECT 1 FROM order_events e WHERE e.subject = 'sale:' || s.id AND e.type = 'sale.ended')`,
    )
    .bind(now, now - ENDED_LOOKBACK_MS)
    .run();
  return meta.changes;
}

/** How long this isolate trusts what it read about endpoints being enabled. */
const ENDPOINTS_TTL_MS = 5000;
let endpointsRead: { at: number; anyEnabled: boolean } | undefined;

/**
 * Whether any endpoint is enabled, read at most every ENDPOINTS_TTL_MS per isolate: a shop
 * with no endpoint pays no query per settlement batch or payment (the deadline race feels
 * every query on its path).
 */
async function anyEndpointEnabled(db: D1Database): Promise<boolean> {
  const now = Date.now();
  if (!endpointsRead || now - endpointsRead.at > ENDPOINTS_TTL_MS) {
    const row = await db.prepare("SELECT 1 FROM event_endpoints WHERE enabled = 1 LIMIT 1").first();
    endpointsRead = { at: now, anyEnabled: row !== null };
  }
  return endpointsRead.anyEnabled;
}

/** An endpoint was added or changed in this isolate: the next kick reads again. */
export function endpointsChanged(): void {
  endpointsRead = undefined;
}

/**
 * Asks the jobs queue to send the order events that are due, if any is: after orders changed
 * (src/orders/order-changes.ts, the one seam every such change goes through, the cron's
 * included) and when deliveries fall due without an order changing (an endpoint enabled, a
 * delivery replayed). Events
 * are never sent from the request that raised them. Never throws: a kick that cannot read D1
 * or reach the queue is left to the cron, and must not fail the settlement batch, the job or
 * the request that asked for it (a settlement batch retried for it could end in the DLQ).
 */
export async function kickOrderEvents(env: { DB: D1Database; JOBS: Queue<JobMessage> }): Promise<void> {
  try {
    await sendDueEvents(env);
  } catch (err) {
    log.warn("order events left to the cron", {}, err);
  }
}

async function sendDueEvents(env: { DB: D1Database; JOBS: Queue<JobMessage> }): Promise<void> {
  if (!(await anyEndpointEnabled(env.DB))) return;
  const due = await env.DB.prepare(
    `SELECT 1 FROM event_deliveries d WHERE ${SENDABLE} AND d.next_attempt_at <= ?1 AND d.lease_until <= ?1 LIMIT 1`,
  )
    .bind(Date.now())
    .first();
  if (due !== null) await env.JOBS.send({ kind: "deliver-order-events" }, { contentType: "json" });
}

interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_seq: number;
  event_id: string;
  type: OrderEventType;
  subject: string;
  status: DeliveryView["status"];
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: number;
  updated_at: number;
}

/** An order event's subject is the order's id (its public one, shown); a sale event's is sale:<id>. */
const shownSubject = async (subject: string, ids: OrderIdCipher) =>
  subject.startsWith("sale:") ? subject : ids.toPublic(subject);

const deliveryView = async (
  r: DeliveryRow,
  attemptLog: DeliveryView["attemptLog"],
  ids: OrderIdCipher,
): Promise<DeliveryView> => ({
  id: r.id,
  endpointId: r.endpoint_id,
  eventId: r.event_id,
  type: r.type,
  subject: await shownSubject(r.subject, ids),
  status: r.status,
  attempts: r.attempts,
  lastStatus: r.last_status,
  lastError: r.last_error,
  nextAttemptAt: r.status === "pending" ? new Date(r.next_attempt_at).toISOString() : null,
  updatedAt: new Date(r.updated_at).toISOString(),
  attemptLog,
});

interface AttemptRow {
  delivery_id: string;
  attempted_at: number;
  status_code: number | null;
  error: string | null;
}

/** The rows as the admin sees them, each with every attempt made (one query for them all). */
async function deliveryViews(db: D1Database, rows: DeliveryRow[], ids: OrderIdCipher): Promise<DeliveryView[]> {
  if (rows.length === 0) return [];
  const { results } = await db
    .prepare(
      `SELECT delivery_id, attempted_at, status_code, error FROM delivery_attempts
       WHERE delivery_id IN (SELECT value FROM json_each(?)) ORDER BY attempted_at, rowid`,
    )
    .bind(JSON.stringify(rows.map((r) => r.id)))
    .all<AttemptRow>();
  const logs = new Map<string, DeliveryView["attemptLog"]>(rows.map((r) => [r.id, []]));
  for (const a of results)
    logs.get(a.delivery_id)?.push({ at: new Date(a.attempted_at).toISOString(), answer: a.status_code, error: a.error });
  return viewsInTurn(rows, (r) => deliveryView(r, logs.get(r.id) ?? [], ids));
}

const DELIVERY_COLUMNS = `d.id, d.endpoint_id, d.event_seq, v.id AS event_id, v.type, d.subject, d.status, d.attempts, d.last_status, d.last_error,
  d.next_attempt_at, d.updated_at`;

/** An endpoint's deliveries, newest first; the cursor is the last event's sequence number. */
export async function listDeliveries(
  db: D1Database,
  endpointId: string,
  cursor: string | undefined,
  ids: OrderIdCipher,
): Promise<DeliveryPage> {
  const { results } = await db
    .prepare(
      `SELECT ${DELIVERY_COLUMNS} FROM event_deliveries d JOIN order_events v ON v.seq = d.event_seq
       WHERE d.endpoint_id = ?1 AND d.event_seq < ?2 ORDER BY d.event_seq DESC LIMIT ${DELIVERY_PAGE_SIZE + 1}`,
    )
    .bind(endpointId, cursor === undefined ? Number.MAX_SAFE_INTEGER : Number(cursor))
    .all<DeliveryRow>();
  const page = results.slice(0, DELIVERY_PAGE_SIZE);
  const more = results.length > DELIVERY_PAGE_SIZE;
  return { deliveries: await deliveryViews(db, page, ids), nextCursor: more ? String(page.at(-1)?.event_seq) : null };
}

/** An order's deliveries to every endpoint, in order of occurrence (GET /admin/orders/:orderId); `subject`: its internal id. */
export async function deliveriesOf(db: D1Database, subject: string, ids: OrderIdCipher): Promise<DeliveryView[]> {
  const { results } = await db
    .prepare(
      `SELECT ${DELIVERY_COLUMNS} FROM event_deliveries d JOIN order_events v ON v.seq = d.event_seq
       WHERE d.subject = ? ORDER BY d.event_seq, d.endpoint_id`,
    )
    .bind(subject)
    .all<DeliveryRow>();
  return deliveryViews(db, results, ids);
}

/**
 * Sends a delivery again, with its event's id and body: pending and due now with a fresh
 * retry schedule, whatever it was (delivered, failed); its earlier attempts stay recorded.
 * Undefined when the endpoint has no such delivery.
 */
export async function replayDelivery(
  db: D1Database,
  endpointId: string,
  deliveryId: string,
  ids: OrderIdCipher,
): Promise<DeliveryView | undefined> {
  const now = Date.now();
  const updated = await db
    .prepare(
      `UPDATE event_deliveries SET status = 'pending', attempts = 0, next_attempt_at = ?3, lease_until = 0, updated_at = ?3
       WHERE id = ?1 AND endpoint_id = ?2 RETURNING id`,
    )
    .bind(deliveryId, endpointId, now)
    .first();
  if (!updated) return undefined;
  const row = await db
    .prepare(`SELECT ${DELIVERY_COLUMNS} FROM event_deliveries d JOIN order_events v ON v.seq = d.event_seq WHERE d.id = ?`)
    .bind(deliveryId)
    .first<DeliveryRow>();
  return row ? (await deliveryViews(db, [row], ids))[0] : undefined;
}
