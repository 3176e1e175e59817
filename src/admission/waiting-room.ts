// A sale's waiting room: joining, the line's progress and a buyer's standing in it. The
// scripts are lua/waiting-room-join.lua and lua/waiting-room-progress.lua; lua/checkout.lua enforces the
// pass. docs/architecture.md ("Admission") says where this sits among the other layers. A sale
// with presale lanes has a line of its own for each lane beside the public one (docs/lanes.md,
// "Lanes with a waiting room"): every function here takes the line it works on.
import { countFunnel } from "../analytics/funnel";
import { IsolateCache } from "../isolate/isolate-cache";
import type { KeepAlive } from "../isolate/shared-work";
import type { Redis } from "../redis/client";
import { LUA, runScript } from "../redis/scripts";
import { bucketSplitOf } from "../sales/known-sales";
import { findSale } from "../sales/repository";
import type { Sale } from "../sales/sale";
import type { QueueState } from "../shared/api-types";
import {
  allLineBuckets,
  type BucketSplit,
  type JoinKind,
  type Line,
  lineKeysOf,
  PUBLIC_LINE,
  QUIET_LINE_MARK,
  waitingRoomJoinCall,
  waitingRoomProgressKeys,
} from "../shared/keys";
import { QUEUE_ADMIT_PER_CALL, QUEUE_MEASURE_WINDOW_MS, QUEUE_PROGRESS_TTL_MS } from "../shared/limits";
import type { Settings } from "../shared/settings";
import { waitingRetryAfterSec } from "../shared/waiting-room-cadence";
import { drawKey, lineSeed } from "../shared/waiting-room-draw";
import { type Progress, parseProgress } from "../shared/waiting-room-progress";
import { lineEstimate } from "./wait-estimate";

/** The sale's record, a second per isolate: joins of a crowd share one D1 read. */
const sales = new IsolateCache<Sale | null>({ ttlMs: 1_000, maxEntries: 1_000 });
/** A line's progress, read at most once per QUEUE_PROGRESS_TTL_MS per isolate, sale and line, whoever polls. */
const progressCache = new IsolateCache<Progress>({ ttlMs: QUEUE_PROGRESS_TTL_MS, maxEntries: 1_000 });
/** The progress cache's key: a lane's name holds no line break. */
const progressKey = (saleId: string, line: Line) => `${saleId}\n${line}`;

export async function recordedSale(db: D1Database, saleId: string, keepAlive: KeepAlive): Promise<Sale | undefined> {
  return (await sales.getOrLoad(saleId, async () => (await findSale(db, saleId)) ?? null, keepAlive)) ?? undefined;
}

/** The scripts found the sale split into another bucket count than the caller's (an edit just before the queue opened). */
export class BucketsChanged extends Error {
  constructor(saleId: string) {
    super(`sale ${saleId} is split into another bucket count than this isolate's; it reads the sale again shortly`);
  }
}

/** How a sale's line is run: `graceMs`, how long an admitted buyer has before counting as a no-show. */
export interface LineRules {
  graceMs: number;
}

/** The deployment's rules for every line (QUEUE_NO_SHOW_GRACE_SEC). */
export const lineRulesOf = (settings: Pick<Settings, "QUEUE_NO_SHOW_GRACE_SEC">): LineRules => ({
  graceMs: settings.QUEUE_NO_SHOW_GRACE_SEC * 1000,
});

/** Moves the line forward to now and reads it: one script call. */
async function advance(redis: Redis, saleId: string, buckets: number, rules: LineRules, line: Line): Promise<Progress> {
  const reply = await runScript<unknown>(redis, LUA.waitingRoomProgress, waitingRoomProgressKeys(saleId, buckets, line), [
    String(QUEUE_ADMIT_PER_CALL),
    String(buckets),
    line,
    String(rules.graceMs),
    String(Math.max(QUEUE_MEASURE_WINDOW_MS, 2 * rules.graceMs)),
  ]);
  if (Array.isArray(reply) && reply[10] === "buckets-changed") throw new BucketsChanged(saleId);
  const progress = parseProgress(reply);
  countFunnel("admitted", saleId, progress.letIn);
  return progress;
}

/**
 * The line's progress: from this isolate's last read when it is under a second old, else one
 * script call shared by every poll waiting. `buckets`: the sale's bucket count.
 */
export function readProgress(
  redis: Redis,
  saleId: string,
  buckets: number,
  rules: LineRules,
  keepAlive: KeepAlive,
  line: Line = PUBLIC_LINE,
): Promise<Progress> {
  return progressCache.getOrLoad(progressKey(saleId, line), () => advance(redis, saleId, buckets, rules, line), keepAlive);
}

/** The line's progress now (one script call), for the console: it also refreshes this isolate's copy. */
export async function readFreshProgress(
  redis: Redis,
  saleId: string,
  buckets: number,
  rules: LineRules,
  line: Line = PUBLIC_LINE,
): Promise<Progress> {
  const progress = await advance(redis, saleId, buckets, rules, line);
  progressCache.set(progressKey(saleId, line), progress);
  return progress;
}

export type JoinOutcome =
  /**
   * place: null while a random sale's pre-queue is not drawn yet (until the start); drawKey:
   * the buyer's, for a random sale; quiet: the place is a quiet one, whose pass buys nothing.
   */
  | { code: "JOINED"; place: number | null; drawKey?: string; quiet: boolean }
  | { code: "QUEUE_NOT_OPEN" | "QUEUE_OFF" | "QUEUE_CLOSED" | "SALE_NOT_FOUND" }
  /** A lane's line: the new joiner's access code (lua/waiting-room-join.lua). */
  | { code: "ACCESS_CODE_REQUIRED" | "ACCESS_CODE_INVALID" | "ACCESS_CODE_USED" };

/** Who joins which line: `codeHash` the joiner's access code, for a lane's line. */
export interface Joiner {
  userId: string;
  kind: JoinKind;
  line: Line;
  codeHash?: string;
}

async function runJoin(redis: Redis, sale: Sale, joiner: Joiner, drawKey: string): Promise<unknown[]> {
  const { userId, kind, line, codeHash } = joiner;
  const { keys, args } = waitingRoomJoinCall(sale.id, userId, bucketSplitOf(sale), drawKey, kind, line, codeHash);
  const reply = await runScript<unknown[]>(redis, LUA.waitingRoomJoin, keys, args);
  if (!Array.isArray(reply) || reply[0] !== "waiting-room-join/3")
    throw new Error("lua/waiting-room-join.lua replied in an unknown layout");
  if (reply[2] === "BUCKETS_CHANGED") throw new BucketsChanged(sale.id);
  return reply;
}

/**
 * Puts the buyer in a line of the sale, once, as a person or quietly; again, the same place, of
 * the kind it was given (lua/waiting-room-join.lua). A random sale draws each line apart, with
 * the line's seed (lineSeed). A line whose running totals the script does not find yet has them
 * written by a read of the line's progress, then is joined. A buyer this call placed is counted
 * in the funnel.
 */
export async function joinWaitingRoom(redis: Redis, sale: Sale, joiner: Joiner, rules: LineRules): Promise<JoinOutcome> {
  const { seed } = sale.queue;
  const key = sale.queue.mode === "random" && seed ? await drawKey(await lineSeed(seed, joiner.line), joiner.userId) : "";
  let reply = await runJoin(redis, sale, joiner, key);
  if (reply[2] === "TOTALS_MISSING") {
    await readFreshProgress(redis, sale.id, sale.buckets, rules, joiner.line);
    reply = await runJoin(redis, sale, joiner, key);
  }
  const place = Number(reply[3]);
  const outcome = String(reply[2]);
  switch (outcome) {
    case "JOINED": {
      const quiet = reply[6] === 1;
      // Placed by this call (not a place held before): the funnel's first step, and a quiet
      // joiner's "turned_away" too. Counted by the script's answer, so two joins at once count one.
      if (reply[7] === 1) {
        countFunnel("joined", sale.id, 1);
        if (quiet) countFunnel("turned_away", sale.id, 1);
      }
      return { code: "JOINED", place: place > 0 ? place : null, ...(key && { drawKey: key }), quiet };
    }
    case "NOT_OPEN":
      return { code: "QUEUE_NOT_OPEN" };
    case "OFF":
      return { code: "QUEUE_OFF" };
    case "CLOSED":
      return { code: "QUEUE_CLOSED" };
    case "ACCESS_CODE_REQUIRED":
    case "ACCESS_CODE_INVALID":
    case "ACCESS_CODE_USED":
      return { code: outcome };
    case "TOTALS_MISSING":
      throw new Error("lua/waiting-room-join.lua found no running totals after waiting-room-progress.lua wrote them");
    default:
      return { code: "SALE_NOT_FOUND" };
  }
}

/** Whether the buyer holds a place in the line already (a person's or a quiet one): one HGET. */
export async function holdsPlace(redis: Redis, sale: Sale, userId: string, line: Line): Promise<boolean> {
  return (await redis.hget(lineKeysOf(sale.id, line, userId, bucketSplitOf(sale)).places, userId)) !== null;
}

/** A buyer's standing in the line, as the poll answers it (the pass is signed by the caller). */
export interface Standing {
  place: number | null;
  admittedThrough: number;
  aheadOfYou: number;
  estimatedWaitSec: number | null;
  likelySoldOutBeforeYou: boolean;
  state: QueueState;
  retryAfterSec: number;
  notice: string | null;
  pass: { place: number; expiresAt: number } | null;
}

const clamp = (n: number, min: number, max: number) => Math.min(max, Math.max(min, n));

/**
 * Where the buyer at `place` of `line` stands, from the line's progress. Costs no Redis command
 * unless the place is admitted: then one read of the buyer's pass record (its expiry, or used).
 */
export async function standing(
  redis: Redis,
  saleId: string,
  split: BucketSplit,
  userId: string,
  line: Line,
  place: number | null,
  progress: Progress,
  now = Date.now(),
): Promise<Standing> {
  const base = {
    place,
    admittedThrough: progress.admitted,
    aheadOfYou: 0,
    estimatedWaitSec: 0,
    likelySoldOutBeforeYou: false,
    notice: progress.notice,
    pass: null,
  };
  const over = progress.state === "missing" || progress.state === "cancelled" || now >= progress.endsAt;
  if (over) return { ...base, state: "closed", retryAfterSec: 60 };
  if (place !== null && place <= progress.admitted) {
    const record = await redis.hget<string>(lineKeysOf(saleId, line, userId, split).passes, userId);
    // A quiet place's record ("<place>:<expiry>:q") answers as a person's: its pass buys nothing (lua/checkout.lua).
    const [admittedPlace, expiry] = String(record ?? "").split(":");
    const expiresAt = Number(expiry);
    if (Number(admittedPlace) === place && expiresAt > now) {
      return {
        ...base,
        state: "admitted",
        retryAfterSec: clamp(Math.ceil((expiresAt - now) / 1000), 1, 60),
        pass: { place, expiresAt },
      };
    }
    return { ...base, state: "closed", retryAfterSec: 60 }; // the pass bought, or its time ran out
  }
  const aheadOfYou = place === null ? 0 : place - progress.admitted - 1;
  const untilStart = Math.max(0, Math.ceil((progress.startsAt - now) / 1000));
  const { estimatedWaitSec, likelySoldOutBeforeYou } = lineEstimate(progress, aheadOfYou, now);
  const waiting = { ...base, aheadOfYou, estimatedWaitSec, likelySoldOutBeforeYou };
  if (progress.remaining === 0) return { ...waiting, likelySoldOutBeforeYou: true, state: "sold_out", retryAfterSec: 10 };
  if (progress.state === "paused") return { ...waiting, state: "paused", retryAfterSec: 5 };
  return { ...waiting, state: "waiting", retryAfterSec: waitingRetryAfterSec(estimatedWaitSec, untilStart) };
}

/** A page of a line, in place order: who holds each place (`count` places from `from`) of a sale of `buckets`. */
export async function linePage(
  redis: Redis,
  saleId: string,
  buckets: number,
  line: Line,
  from: number,
  count: number,
): Promise<{ drawn: number; userIds: string[] }> {
  const every = allLineBuckets(saleId, line, buckets);
  const sizes = (await Promise.all(every.map((b) => redis.zcard(b.preQueue)))).map(Number);
  const drawn = sizes.reduce((n, size) => n + size, 0);
  const last = from + count - 1;
  // Places 1..drawn are the pre-queue's buckets in order (ranks from - 1 .. last - 1 of the draw).
  const drawnParts: Promise<string[]>[] = [];
  let offset = 0;
  for (const [b, { preQueue }] of every.entries()) {
    const size = sizes[b] ?? 0;
    const lo = Math.max(from - 1, offset);
    const hi = Math.min(last, drawn) - 1;
    if (lo <= Math.min(hi, offset + size - 1))
      drawnParts.push(redis.zrange<string[]>(preQueue, lo - offset, Math.min(hi, offset + size - 1) - offset));
    offset += size;
  }
  // Places after drawn are ranks in the line, spread over every bucket's line by the joiner's bucket.
  const lineParts =
    last > drawn
      ? every.map((b) =>
          redis.zrange<string[]>(b.line, Math.max(from, drawn + 1) - drawn, last - drawn, { byScore: true, withScores: true }),
        )
      : [];
  const [drawnPart, lineReplies] = await Promise.all([
    Promise.all(drawnParts).then((parts) => parts.flat()),
    Promise.all(lineParts),
  ]);
  const lined = lineReplies.flatMap((reply) =>
    Array.from({ length: reply.length / 2 }, (_, i) => ({ userId: String(reply[2 * i]), rank: Number(reply[2 * i + 1]) })),
  );
  lined.sort((a, b) => a.rank - b.rank);
  // A pre-queue member is "<64 hex draw key>:<bucket, after a q when quiet>:<user id>".
  const userOf = (member: string) => {
    const entry = member.slice(65);
    return entry.slice(entry.indexOf(":") + 1);
  };
  const lineUser = (member: string) => (member.startsWith(QUIET_LINE_MARK) ? member.slice(QUIET_LINE_MARK.length) : member);
  return {
    drawn,
    userIds: [...drawnPart.map((member) => userOf(String(member))), ...lined.map((entry) => lineUser(entry.userId))],
  };
}
