// A sale's batches of access codes (docs/lanes.md): D1 records each batch and its codes'
// hashes (what the console lists and revokes, and what a restore rebuilds the codes from);
// Redis holds the live codes, their uses left and who each is bound to, which
// lua/checkout.lua checks and spends with the units.
import { hashEntries, hashRecord, type Redis } from "../redis/client";
import { toHex } from "../shared/hex";
import { accessCodeKeys, CODE_SHARDS, codeShardOf } from "../shared/keys";
import { codeHash, codeRecord, newCodes, readCode } from "./access-codes";

/** A batch as D1 records it, with its codes' counts as Redis keeps them. */
export interface CodeBatch {
  batchId: string;
  lane: string;
  count: number;
  uses: number;
  expiresAt: number | null;
  revokedAt: number | null;
  createdAt: number;
  /** Codes bound to an account by a first use. */
  bound: number;
  /** Uses spent (a use given back by a return while the lanes are open is not). */
  spent: number;
}

interface BatchRow {
  id: string;
  lane: string;
  count: number;
  uses: number;
  expires_at: number | null;
  revoked_at: number | null;
  created_at: number;
}

/** Code hashes per D1 statement (each a JSON array of ~35 bytes an entry, well inside D1's limits). */
const HASHES_PER_STATEMENT = 10_000;
/** Codes per HSET: a request of ~100 KB. */
const CODES_PER_COMMAND = 1_000;

const newBatchId = () => `cb_${toHex(crypto.getRandomValues(new Uint8Array(8)))}`;

/** Each part of `items`, `size` at most. */
const chunks = <T>(items: T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

export interface NewBatch {
  lane: string;
  count: number;
  uses: number;
  expiresAt: number | null;
}

/**
 * Makes a batch of fresh codes for a lane of `saleId`: D1 records the batch and the codes'
 * hashes first, then Redis gets the live codes. The codes themselves are returned, to be shown
 * this once, and kept nowhere. Should Redis fail, the batch is revoked (nobody saw its codes)
 * and the error thrown.
 */
export async function createBatch(
  db: D1Database,
  redis: Redis,
  saleId: string,
  batch: NewBatch,
): Promise<{ batchId: string; codes: string[] }> {
  const batchId = newBatchId();
  const codes = newCodes(batch.count);
  const hashes = await Promise.all(codes.map((code) => codeHash(saleId, readCode(code) as string)));
  const sale = Number(saleId);
  await db.batch([
    db
      .prepare(
        "INSERT INTO code_batches (id, sale_id, lane, count, uses, expires_at, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
      )
      .bind(batchId, sale, batch.lane, batch.count, batch.uses, batch.expiresAt, Date.now()),
    ...chunks(hashes, HASHES_PER_STATEMENT).map((part) =>
      db
        .prepare("INSERT INTO access_codes (sale_id, code_hash, batch_id) SELECT ?1, value, ?2 FROM json_each(?3)")
        .bind(sale, batchId, JSON.stringify(part)),
    ),
  ]);
  const record = codeRecord(batchId, batch.lane, batch.uses, batch.expiresAt);
  const keys = accessCodeKeys(saleId);
  const byShard = Array.from({ length: CODE_SHARDS }, () => [] as string[]);
  for (const hash of hashes) byShard[codeShardOf(hash)]?.push(hash, record);
  try {
    await Promise.all(
      byShard.flatMap((fields, shard) =>
        chunks(fields, 2 * CODES_PER_COMMAND).map((part) => redis.hset(keys.shard(shard), hashRecord(part))),
      ),
    );
  } catch (err) {
    await revokeBatch(db, redis, saleId, batchId).catch(() => undefined);
    throw err;
  }
  return { batchId, codes };
}

/** The lane of the code whose hash is `hash`, as Redis holds it: one HGET; undefined when it holds none. */
export async function laneOfCode(redis: Redis, saleId: string, hash: string): Promise<string | undefined> {
  const record = await redis.hget<string>(accessCodeKeys(saleId).shard(codeShardOf(hash)), hash);
  return record === null ? undefined : String(record).split("|")[1];
}

/** Every batch of the sale, oldest first, with how many of its codes are bound and its uses spent. */
export async function listBatches(db: D1Database, redis: Redis, saleId: string): Promise<CodeBatch[]> {
  const [{ results }, counters] = await Promise.all([
    db
      .prepare(
        "SELECT id, lane, count, uses, expires_at, revoked_at, created_at FROM code_batches WHERE sale_id = ? ORDER BY created_at, id",
      )
      .bind(Number(saleId))
      .all<BatchRow>(),
    hashEntries(redis, accessCodeKeys(saleId).batches).then(hashRecord),
  ]);
  const counter = (batchId: string, name: string) => Number(counters[`${batchId}:${name}`] ?? 0);
  return results.map((r) => ({
    batchId: r.id,
    lane: r.lane,
    count: r.count,
    uses: r.uses,
    expiresAt: r.expires_at,
    revokedAt: r.revoked_at,
    createdAt: r.created_at,
    bound: counter(r.id, "bound"),
    spent: counter(r.id, "spent"),
  }));
}

/**
 * Revokes a batch: its codes are refused from now on (uses spent stay spent). Redis is told
 * before D1 answers, so a retry after a failure finishes the job. False: no such batch.
 */
export async function revokeBatch(db: D1Database, redis: Redis, saleId: string, batchId: string): Promise<boolean> {
  const found = await db
    .prepare("SELECT id FROM code_batches WHERE sale_id = ?1 AND id = ?2")
    .bind(Number(saleId), batchId)
    .first<{ id: string }>();
  if (!found) return false;
  await redis.hset(accessCodeKeys(saleId).batches, { [`${batchId}:revoked`]: 1 });
  await db
    .prepare("UPDATE code_batches SET revoked_at = ?3 WHERE sale_id = ?1 AND id = ?2 AND revoked_at IS NULL")
    .bind(Number(saleId), batchId, Date.now())
    .run();
  return true;
}

/** Codes per page read back from D1 for a restore. */
const RESTORE_PAGE = 5_000;

/** An order bought with a code, as D1 records it (src/orders/sale-order-counts.ts, restoreSnapshot). */
export interface CodeOrder {
  accessCode: string;
  userId: string;
  holding: boolean;
  returnedAt: number | null;
}

/**
 * The sale's live codes rebuilt from D1 after Redis lost them, a page of records per shard at a
 * time: each code bound to the buyer of its first order, with a use spent for each of its orders
 * but those whose units came back before `publicStartsAt` (an order ended and not yet back
 * comes back with the restore, at `now`). `onPage` gets each shard's field, value pairs; the
 * batches' counters and revocations come back last, as the batches hash's pairs.
 */
export async function restoredCodes(
  db: D1Database,
  saleId: string,
  orders: readonly CodeOrder[],
  publicStartsAt: number,
  now: number,
  onPage: (shard: number, pairs: string[]) => Promise<unknown>,
): Promise<string[]> {
  const boundTo = new Map<string, string>();
  const spent = new Map<string, number>();
  for (const o of orders) {
    if (!boundTo.has(o.accessCode)) boundTo.set(o.accessCode, o.userId);
    if (o.holding || (o.returnedAt ?? now) >= publicStartsAt) spent.set(o.accessCode, (spent.get(o.accessCode) ?? 0) + 1);
  }
  const counters: Record<string, number> = {};
  const count = (field: string, n: number) => {
    if (n > 0) counters[field] = (counters[field] ?? 0) + n;
  };
  let after = "";
  for (;;) {
    const { results } = await db
      .prepare(
        `SELECT c.code_hash, c.batch_id, b.lane, b.uses, b.expires_at, b.revoked_at FROM access_codes c
         JOIN code_batches b ON b.id = c.batch_id
         WHERE c.sale_id = ?1 AND c.code_hash > ?2 ORDER BY c.code_hash LIMIT ?3`,
      )
      .bind(Number(saleId), after, RESTORE_PAGE)
      .all<{
        code_hash: string;
        batch_id: string;
        lane: string;
        uses: number;
        expires_at: number | null;
        revoked_at: number | null;
      }>();
    const byShard = Array.from({ length: CODE_SHARDS }, () => [] as string[]);
    for (const r of results) {
      const used = spent.get(r.code_hash) ?? 0;
      const bound = boundTo.get(r.code_hash) ?? "";
      byShard[codeShardOf(r.code_hash)]?.push(
        r.code_hash,
        codeRecord(r.batch_id, r.lane, Math.max(0, r.uses - used), r.expires_at, bound),
      );
      count(`${r.batch_id}:spent`, used);
      count(`${r.batch_id}:bound`, bound === "" ? 0 : 1);
      if (r.revoked_at !== null) counters[`${r.batch_id}:revoked`] = 1;
    }
    await Promise.all(byShard.map((pairs, shard) => pairs.length > 0 && onPage(shard, pairs)));
    if (results.length < RESTORE_PAGE) break;
    after = (results.at(-1) as { code_hash: string }).code_hash;
  }
  return Object.entries(counters).flatMap(([field, n]) => [field, String(n)]);
}
