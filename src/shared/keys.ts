import SipHash from "siphash";
import { DEFAULT_VARIANT } from "./limits";

// Every key of a sale carries the same hash tag, so one script can touch them all on a
// Redis Cluster (and on Upstash, which may shard): KEYS[] never cross a slot.

/**
 * A sale's keys that do not grow with the crowd. The whole layout, per-buyer buckets
 * included, is one table: docs/architecture.md, "The sale's Redis layout".
 */
export interface SaleKeys {
  /**
   * Hash: name, stock, remaining, starts, ends, slot, seq, rate, burst, limit, state, version,
   * buckets; a sale with variants adds variants ("<id>=<stock>,...") and v:<id> (each one's remaining).
   */
  meta: string;
  /** Token bucket of the sale's checkout admission. */
  admission: string;
  /** The waiting room's sale-wide keys (lua/waiting-room-join.lua, lua/waiting-room-progress.lua): see WaitingRoomKeys. */
  queue: WaitingRoomKeys;
  /**
   * Hash of a sale sold by draw (lua/draw-enter.lua): standing (entries counted), e:<variant>
   * (entries) and u:<variant> (units asked) while entries are open; sealed (ms) once the draw's
   * run sealed them (lua/draw-seal.lua).
   */
  draw: string;
}

/** A sale's waiting room in Redis, sale-wide; the sale's meta hash holds its settings (qmode, qopens, qrate, qttl). */
export interface WaitingRoomKeys {
  /**
   * Hash: admitted (every place up to it is admitted), used and expired (passes), lined (ranks
   * given in the line after the pre-queue: BucketKeys.line), drawn (a random sale's pre-queue
   * joiners, kept with each one's write), at (ms of the last progress).
   */
  counters: string;
  /**
   * String: the pre-queue's size per bucket as a Fenwick tree of u32 fields (BITFIELD), kept
   * with each pre-queue joiner's write, so a joiner's place after the start (the sizes of the
   * buckets before its own) costs one command whatever the bucket count.
   */
  drawSizes: string;
}

/**
 * One bucket of a sale's per-buyer and per-order records. A buyer's records, and every order
 * of theirs, live in the bucket `bucketOf(userId, buckets)`, so no key grows past its share
 * of the crowd (the sale's bucket count is chosen for its stock: bucketsFor).
 */
export interface BucketKeys {
  /** Hash: user id -> "<units held>:<latest order id>". */
  buyers: string;
  /** Sorted set: order ids not settled in D1 yet, scored by when they were last sent (ms). */
  outbox: string;
  /** Hash: order id -> "<quantity>[@<variant id>][|<lane>|<code hash>][|<traceparent>]:<user id>" (parsePendingRecord), for the orders in the outbox. */
  pending: string;
  /** Set: order ids whose units went back on sale (each comes back once). */
  returned: string;
  /** Hash: "<user id>\n<Idempotency-Key>" -> "<order id>:<quantity>[@<variant id>]", for checkouts that sent a key. */
  checkoutKeys: string;
  /**
   * Hash: user id -> place in the waiting room, or "pre" for a random sale's pre-queue joiner
   * (placed by the draw); "q" before either for a quiet joiner's place, whose pass buys nothing.
   */
  places: string;
  /**
   * Hash: user id -> "<place>:<pass expiry ms>", or "<place>:used" once the pass bought; a quiet
   * place's "<place>:<pass expiry ms>:q", a pass that buys nothing (lua/checkout.lua).
   */
  passes: string;
  /** Sorted set: user ids of admitted passes not used yet, scored by their expiry (ms). */
  live: string;
  /**
   * Sorted set, all scores 0: "<draw key hex>:<bucket>:<user id>" of a random sale's pre-queue
   * joiners whose draw key falls in this bucket's range (prePartitionOf, not the user's
   * bucket): the lexical order inside a bucket, bucket after bucket, is the draw. A quiet
   * joiner's member has "q" before the bucket.
   */
  preQueue: string;
  /**
   * Hash of a draw's entries: user id -> "<variant>|<quantity>|<entered at ms>|<receipt hex>|<state>"
   * (lua/draw-enter.lua: e entered, q entered quietly, w withdrawn).
   */
  entries: string;
  /**
   * Sorted set: user id -> rank in the line after the pre-queue (a fifo sale's every joiner, a
   * random sale's joiners after the start), for the joiners of this bucket: the ranks of all
   * buckets together are 1..lined, one each, in arrival order (lua/waiting-room-join.lua). A
   * quiet joiner's member is its user id after QUIET_LINE_MARK.
   */
  line: string;
}

/**
 * A line of a sale's waiting room: "" for the public line, else the presale lane whose own line
 * it is (docs/lanes.md, "Lanes with a waiting room"). Each line has keys of its own: the public
 * line's are the names the waiting room always had, a lane's add `lane:<lane>:` before them.
 */
export type Line = string;

/** The public line: the waiting room of a sale without lanes, and of every sale from its public start. */
export const PUBLIC_LINE: Line = "";

const linePrefix = (saleId: string, line: Line) => `fs:{sale:${saleId}}${line === PUBLIC_LINE ? "" : `:lane:${line}`}:queue`;

/** A line's sale-wide keys (the public line's by default). */
export function waitingRoomKeys(saleId: string, line: Line = PUBLIC_LINE): WaitingRoomKeys {
  const prefix = linePrefix(saleId, line);
  return { counters: prefix, drawSizes: `${prefix}:draw-sizes` };
}

/** A line's keys in one bucket: its places, passes, live passes, pre-queue range and line after the pre-queue (see BucketKeys). */
export type LineBucketKeys = Pick<BucketKeys, "places" | "passes" | "live" | "preQueue" | "line">;

/** Bucket `bucket` of `buckets` of a line's keys. */
export function lineBucketKeys(saleId: string, line: Line, bucket: number, buckets: number): LineBucketKeys {
  const prefix = linePrefix(saleId, line);
  const suffix = buckets === 1 ? "" : `:b${bucket}`;
  return {
    places: `${prefix}:places${suffix}`,
    passes: `${prefix}:passes${suffix}`,
    live: `${prefix}:live${suffix}`,
    preQueue: `${prefix}:pre${suffix}`,
    line: `${prefix}:arrivals${suffix}`,
  };
}

/** Every bucket of a line, bucket 0 first. */
export const allLineBuckets = (saleId: string, line: Line, buckets: number): LineBucketKeys[] =>
  Array.from({ length: buckets }, (_, b) => lineBucketKeys(saleId, line, b, buckets));

/** The keys of `userId`'s bucket of a line. */
export const lineKeysOf = (saleId: string, line: Line, userId: string, split: BucketSplit): LineBucketKeys =>
  lineBucketKeys(saleId, line, bucketOf(userId, split), split.count);

/**
 * Every key of the presale lanes' own lines (a queued sale with lanes: docs/lanes.md): `perBucket`
 * grow with the lanes' joiners, `small` are each line's counters and draw sizes.
 */
export function laneLineKeys(saleId: string, lanes: readonly Line[], buckets: number): { small: string[]; perBucket: string[] } {
  return {
    small: lanes.flatMap((lane) => Object.values(waitingRoomKeys(saleId, lane))),
    perBucket: lanes.flatMap((lane) => allLineBuckets(saleId, lane, buckets).flatMap((b) => Object.values(b))),
  };
}

export function saleKeys(saleId: string): SaleKeys {
  const prefix = `fs:{sale:${saleId}}`;
  return { meta: `${prefix}:meta`, admission: `${prefix}:admission`, queue: waitingRoomKeys(saleId), draw: `${prefix}:draw` };
}

/**
 * Bucket `bucket` of `buckets`. A sale of one bucket keeps the names sales had before they
 * were split (fs:{sale:<id>}:buyers); bucket b of several adds ":b<b>" (fs:{sale:<id>}:buyers:b3).
 */
export function bucketKeys(saleId: string, bucket: number, buckets: number): BucketKeys {
  const prefix = `fs:{sale:${saleId}}`;
  const suffix = buckets === 1 ? "" : `:b${bucket}`;
  return {
    buyers: `${prefix}:buyers${suffix}`,
    outbox: `${prefix}:outbox${suffix}`,
    pending: `${prefix}:pending${suffix}`,
    returned: `${prefix}:returned${suffix}`,
    checkoutKeys: `${prefix}:keys${suffix}`,
    ...lineBucketKeys(saleId, PUBLIC_LINE, bucket, buckets),
    entries: `${prefix}:draw:entries${suffix}`,
  };
}

/** Every bucket of a sale, bucket 0 first. */
export const allBuckets = (saleId: string, buckets: number): BucketKeys[] =>
  Array.from({ length: buckets }, (_, b) => bucketKeys(saleId, b, buckets));

/** A sale's SipHash-2-4 key: four 32-bit words, random per sale. */
export type BucketKey = readonly [number, number, number, number];

/**
 * How a sale's per-buyer records are split: into `count` buckets, a user's picked by
 * SipHash-2-4 of the id under the sale's own random `key`, so whoever chooses user ids cannot
 * aim them at one bucket (an unkeyed hash lets anyone compute ids that share a bucket and grow
 * one key past the record limit). `key` null: a sale stored before sales had keys, whose
 * buyers stay where the unkeyed FNV-1a put them.
 */
export interface BucketSplit {
  readonly count: number;
  readonly key: BucketKey | null;
}

/** One bucket and no key: a sale of one bucket, or one D1 does not hold (nothing of it to find). */
export const ONE_BUCKET: BucketSplit = { count: 1, key: null };

/** A new sale's bucket key, as D1 keeps it: 32 hex digits. */
export const newBucketKey = (): string =>
  Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");

/** The words of a bucket key kept as 32 hex digits. */
export function bucketKeyOf(hex: string): BucketKey {
  const word = (i: number) => Number.parseInt(hex.slice(8 * i, 8 * i + 8), 16);
  return [word(0), word(1), word(2), word(3)];
}

const utf8 = new TextEncoder();

/**
 * The bucket holding `userId`'s records and orders. Runs for every buyer of every merged call
 * and settlement batch: SipHash (a library, the keyed hash made for hash tables fed by
 * strangers) for a keyed sale; for an unkeyed one the FNV-1a it was split by, with one encoder
 * for the isolate and an indexed loop rather than an iterator.
 */
export function bucketOf(userId: string, split: BucketSplit): number {
  if (split.count === 1) return 0;
  if (split.key) return SipHash.hash_uint(split.key, userId) % split.count;
  const bytes = utf8.encode(userId);
  let hash = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) hash = Math.imul(hash ^ (bytes[i] as number), 0x01000193);
  return (hash >>> 0) % split.count;
}

/**
 * The bucket of a random sale's pre-queue that holds the joiner with this draw key (64 hex
 * characters): by its leading 32 bits, so every draw key of a bucket sorts before those of the
 * next, and the buckets in order are the draw in order.
 */
export const prePartitionOf = (drawKey: string, buckets: number): number =>
  Math.floor((Number.parseInt(drawKey.slice(0, 8), 16) * buckets) / 2 ** 32);

/** The keys of `userId`'s bucket. */
export const buyerKeys = (saleId: string, userId: string, split: BucketSplit): BucketKeys =>
  bucketKeys(saleId, bucketOf(userId, split), split.count);

/**
 * The most one buyer or one order adds to any one per-buyer key, in bytes of MEMORY USAGE:
 * a checkout-keys field at the longest user id (128) and Idempotency-Key (200) the API takes,
 * its value and Redis' per-entry overhead, rounded up to the allocator's size class. Typical
 * ids and keys take about a quarter of it (docs/benchmarks.md, "Big keys").
 */
export const MAX_BYTES_PER_BUYER_RECORD = 512;

/** The most buckets a sale is split into: a million units under a 256 KiB record limit take about 3,900. */
export const MAX_BUCKETS = 4_096;

/**
 * The crowd a waiting room or a draw is sized for: a waiting room's places, passes, pre-queue
 * and line grow with joiners, a draw's entries with entrants, not units (docs/benchmarks.md,
 * "A waiting room at a million buyers", "Draws").
 */
export const QUEUE_PLANNED_JOINERS = 1_000_000;

/**
 * How many buckets a sale of `stock` units is split into so that, sold out, no per-buyer key
 * holds more than half of `recordLimitBytes` (each buyer and each order adds at most one
 * record to a key; every order holds at least a unit, so there are at most `stock` of each).
 * A sale whose records grow with its crowd rather than its units (`byCrowd`: a waiting room's
 * joiners, a draw's entrants) is sized for QUEUE_PLANNED_JOINERS of them at least.
 */
export function bucketsFor(stock: number, recordLimitBytes: number, byCrowd: boolean): number {
  const records = byCrowd ? Math.max(stock, QUEUE_PLANNED_JOINERS) : stock;
  const needed = Math.ceil((records * MAX_BYTES_PER_BUYER_RECORD) / (recordLimitBytes / 2));
  return Math.min(MAX_BUCKETS, Math.max(1, needed));
}

/** A sale's cached card (what GET /api/sales/:saleId shows of D1's record) and its eviction floor (lua/cache-read.lua). */
export function saleCardKeys(saleId: string): { entry: string; floor: string } {
  const prefix = `fs:{sale:${saleId}}:card`;
  return { entry: prefix, floor: `${prefix}:floor` };
}

/**
 * The catalog's keys, under one hash tag: the Bloom filter of every sale id, its ready
 * marker (lua/bloom.lua) and fill progress; cached pages of GET /api/sales, one per cursor, and the floor that
 * evicts them all at once when any sale changes.
 */
export const catalogKeys = {
  bloom: "fs:{catalog}:bloom",
  bloomReady: "fs:{catalog}:bloom:ready",
  /** The last sale id a fill of the filter from D1 has reached (a fill spans cron runs). */
  bloomFill: "fs:{catalog}:bloom:fill",
  floor: "fs:{catalog}:floor",
  page: (cursor: string) => `fs:{catalog}:page:${cursor}`,
} as const;

/**
 * A pending order's record, "<quantity>[@<variant id>][|<lane>|<code hash>][|<traceparent>]:<user id>"
 * (lua/checkout.lua): the first ':' ends the units, whatever the user id holds; no variant is
 * the sale's "default"; a lane and code only for an order bought in a presale lane; the
 * traceparent of the request that reserved it (src/shared/trace.ts), which records written
 * before it carry none. The fields after the units tell themselves apart by their count.
 */
export function parsePendingRecord(record: string): {
  quantity: number;
  variant: string;
  userId: string;
  lane?: string;
  accessCode?: string;
  traceparent?: string;
} {
  const colon = record.indexOf(":");
  const [units = "", ...more] = record.slice(0, colon).split("|");
  const [quantity = "", variant = DEFAULT_VARIANT] = units.split("@");
  const [lane, accessCode] = more.length >= 2 ? more : [];
  const traceparent = more.length % 2 === 1 ? more.at(-1) : undefined;
  return {
    quantity: Number(quantity),
    variant,
    userId: record.slice(colon + 1),
    ...(lane !== undefined && accessCode !== undefined && { lane, accessCode }),
    ...(traceparent !== undefined && { traceparent }),
  };
}

/**
 * Checkout outcomes per second for the admin console's time series, one hash per minute
 * (`minute` = epoch seconds / 60, floored) so a reader fetches a few small hashes, never one
 * that grows all sale long. Fields are `<epoch second>:<code>`, code being OK or a refusal
 * code (SOLD_OUT, RATE_LIMITED, ...); values are counts. Written by lua/checkout.lua for
 * what Redis decided and by each isolate for the refusals it answered locally; kept 2 hours.
 */
export const saleStatsKey = (saleId: string, minute: number) => `fs:{sale:${saleId}}:stats:${minute}`;

/** How many hashes a sale's access codes are spread over: by the first hex digit of each code's hash. */
export const CODE_SHARDS = 16;

/**
 * A sale's access codes (docs/lanes.md): `batches`, a hash of each batch's counters
 * ("<batch id>:bound", ":spent") and revocations ("<batch id>:revoked"); `shard(n)`, the hash
 * of the codes whose hash starts with hex digit n: code hash ->
 * "<batch id>|<lane>|<uses left>|<expiry ms, 0: none>|<bound user id, or empty>".
 */
export const accessCodeKeys = (saleId: string) => ({
  batches: `fs:{sale:${saleId}}:codebatches`,
  shard: (n: number) => `fs:{sale:${saleId}}:codes:${n.toString(16)}`,
});

/** The shard (0..CODE_SHARDS-1) of a code by its hash (hex). */
export const codeShardOf = (codeHash: string): number => Number.parseInt(codeHash.charAt(0), 16);

/**
 * lua/checkout.lua's KEYS, in its header's order, counting outcomes into `minute`'s counters:
 * the sale-wide keys, the code keys when a checkout names a code (the batches hash, then each
 * shard named, once), a lane's line's counters when the call names that line (`line`: the lane
 * of the call's lane passes, PUBLIC_LINE for none), then the keys of each bucket `userIds` live
 * in, once, in order of first appearance (with the named line's passes and live passes of the
 * bucket after its own six). `bucketSlots[i]` is which of those buckets (1-based) holds
 * `userIds[i]`; `codeRefs[i]` is the code as ARGV names it ("<shard among the code keys>:<hash>",
 * "" for none).
 */
export function checkoutScriptKeys(
  saleId: string,
  minute: number,
  split: BucketSplit,
  userIds: string[],
  codeHashes: (string | undefined)[] = [],
  line: Line = PUBLIC_LINE,
): { keys: string[]; bucketSlots: number[]; codeKeyCount: number; codeRefs: string[] } {
  const sale = saleKeys(saleId);
  const keys = [sale.meta, sale.admission, saleStatsKey(saleId, minute), sale.queue.counters];
  const codes = accessCodeKeys(saleId);
  const slotOfShard = new Map<number, number>();
  const codeRefs = userIds.map((_, i) => {
    const hash = codeHashes[i];
    if (hash === undefined) return "";
    if (slotOfShard.size === 0) keys.push(codes.batches);
    const shard = codeShardOf(hash);
    let slot = slotOfShard.get(shard);
    if (slot === undefined) {
      slot = slotOfShard.size + 1;
      slotOfShard.set(shard, slot);
      keys.push(codes.shard(shard));
    }
    return `${slot}:${hash}`;
  });
  const codeKeyCount = slotOfShard.size === 0 ? 0 : slotOfShard.size + 1;
  if (line !== PUBLIC_LINE) keys.push(waitingRoomKeys(saleId, line).counters);
  const slotOfBucket = new Map<number, number>();
  const bucketSlots = userIds.map((userId) => {
    const bucket = bucketOf(userId, split);
    let slot = slotOfBucket.get(bucket);
    if (slot === undefined) {
      slot = slotOfBucket.size + 1;
      slotOfBucket.set(bucket, slot);
      const k = bucketKeys(saleId, bucket, split.count);
      keys.push(k.buyers, k.outbox, k.pending, k.checkoutKeys, k.passes, k.live);
      if (line !== PUBLIC_LINE) {
        const own = lineBucketKeys(saleId, line, bucket, split.count);
        keys.push(own.passes, own.live);
      }
    }
    return slot;
  });
  return { keys, bucketSlots, codeKeyCount, codeRefs };
}

/**
 * What starts a quiet joiner's member of a bucket's line (a control character, which no user
 * id holds: src/shared/user-id.ts): lua/waiting-room-progress.lua lets its place in as nobody's.
 */
export const QUIET_LINE_MARK = "\u0001";

/** How a join is told apart: a person's place, or a quiet one (src/admission/gate.ts) whose pass buys nothing. */
export type JoinKind = "person" | "quiet";

/**
 * lua/waiting-room-join.lua's KEYS and ARGV, in its header's order, for `userId`'s join of a
 * line of a sale split by `split`: the sale's meta, the line's counters, `userId`'s bucket's
 * keys of the line, the pre-queue range of its draw key (a random sale's; bucket 0's without
 * one), the line's draw sizes, then for a lane's line the access code's keys when `codeHash`
 * names one. A fixed number of keys whatever the bucket count: a join costs the same at one
 * bucket and at thousands.
 */
export function waitingRoomJoinCall(
  saleId: string,
  userId: string,
  split: BucketSplit,
  drawKey: string,
  kind: JoinKind,
  line: Line = PUBLIC_LINE,
  codeHash = "",
): { keys: string[]; args: string[] } {
  const queue = waitingRoomKeys(saleId, line);
  const bucket = bucketOf(userId, split);
  const own = lineBucketKeys(saleId, line, bucket, split.count);
  const preBucket = drawKey ? prePartitionOf(drawKey, split.count) : 0;
  const codes = accessCodeKeys(saleId);
  return {
    keys: [
      saleKeys(saleId).meta,
      queue.counters,
      own.places,
      own.line,
      lineBucketKeys(saleId, line, preBucket, split.count).preQueue,
      queue.drawSizes,
      ...(codeHash === "" ? [] : [codes.batches, codes.shard(codeShardOf(codeHash))]),
    ],
    args: [userId, drawKey, String(split.count), String(bucket), String(preBucket), kind === "quiet" ? "1" : "0", line, codeHash],
  };
}

/**
 * lua/waiting-room-progress.lua's KEYS, in its header's order: the sale's meta, the line's
 * counters and draw sizes, then each bucket's passes, live set, range of the pre-queue and line
 * of the line.
 */
export function waitingRoomProgressKeys(saleId: string, buckets: number, line: Line = PUBLIC_LINE): string[] {
  const queue = waitingRoomKeys(saleId, line);
  return [
    saleKeys(saleId).meta,
    queue.counters,
    queue.drawSizes,
    ...allLineBuckets(saleId, line, buckets).flatMap((b) => [b.passes, b.live, b.preQueue, b.line]),
  ];
}

/**
 * Sorted set: the user ids seen from one client address in a sale, scored by first arrival
 * (src/admission/accounts-per-address.ts); expires with the sale.
 */
export const addressUsersKey = (saleId: string, ip: string) => `fs:{sale:${saleId}}:address:${ip}`;

/** How long a minute of outcome counters is kept. */
export const SALE_STATS_TTL_SECONDS = 7_200;
