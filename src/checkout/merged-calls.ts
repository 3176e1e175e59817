/**
 * Request merging on a hot key: the checkouts one isolate holds for one sale share one
 * Redis call. While a call is in flight, new arrivals wait; when it lands, the same
 * request sends everyone waiting as the next call (group commit), and so on until no one
 * waits. An idle sale adds no delay: a lone checkout goes out at once, as a batch of one.
 * Under a stampede an isolate makes about one call per round trip instead of one per buyer.
 * Before each call, `answerHere` may answer a waiting item on the spot (what the last call
 * taught, such as a sale now sold out): it is written into the item's slot like any answer,
 * and the call carries only the rest, or is not made at all.
 *
 * Written by hand because it must follow workerd's rules, which no general batching
 * library knows:
 * - I/O belongs to the request that started it. Every call is sent by the lane's leader
 *   from its own context, in its own chain of awaits, kept alive by its waitUntil while it
 *   leads, so a buyer who disconnects cannot cancel a call others wait on.
 * - A promise one request resolves for another may resume in the resolver's context, where
 *   the waiter's response would be foreign I/O. So requests share plain data only: the
 *   leader writes each answer into its waiter's slot, and every waiter picks its own up
 *   from a timer of its own, which also keeps it from being cancelled as hung, bounds the
 *   wait, and lets it take the lead of a lane whose leader stepped down or stalled.
 * That is the isolate's one rule for sharing work (src/isolate/shared-work.ts); its waiters
 * pick their answers up with the same `pickUp`.
 */

import { type KeepAlive, type Outcome, pickUp } from "../isolate/shared-work";

/** Sends one merged call: one answer per item, in the items' order. */
export type MergedCall<I, R> = (items: I[]) => Promise<R[]>;

/** An item's answer known without a call, or undefined to send it. Runs in the leader, just before each call. */
export type AnswerHere<I, R> = (item: I) => R | undefined;

/** The answer did not come within the wait limit. `sent`: the call may have run. */
export class MergedCallTimeout extends Error {
  constructor(readonly sent: boolean) {
    super(sent ? "the merged call did not answer in time" : "the merged call was not sent in time");
  }
}

export interface MergedCallsOptions {
  /** The most items one call carries; the rest go in the next. */
  maxItems: number;
  /** How long an item waits for its answer, queued and in flight. */
  maxWaitMs: number;
  /** A leader whose call has not answered for this long is replaced by a waiter. */
  stallMs: number;
  /**
   * How many calls, and for how long, one request leads before a waiter takes over: its
   * subrequests, connections and CPU are one request's, within that request's limits.
   */
  leadCalls: number;
  leadMs: number;
  /** How soon a waiter first looks for its answer (and for a leader); it backs off to 4x. */
  pollMs: number;
}

interface Waiter<I, R> {
  item: I;
  /** Past this (epoch ms) the item is not sent any more: its request gave up or is gone. */
  deadline: number;
  /** In a call already; the answer will come from it. */
  carried: boolean;
  /** Written by the leader, read by the waiter's own timer. */
  outcome?: Outcome<R>;
}

interface Lane<I, R> {
  waiting: Waiter<I, R>[];
  /** The leader's token while some request leads; only its holder clears it. */
  leader: object | undefined;
  /** When the leader last sent a call (epoch ms). */
  sentAt: number;
}

/** How much of a call's expected duration a waiter lets pass before its first look. */
const FIRST_LOOK_SHARE = 0.8;
/**
 * The latest first look: after a slow spell (Redis far or busy) the average takes a few calls
 * to come down, and a buyer's answer must not sit in its slot that long meanwhile.
 */
const FIRST_LOOK_MAX_MS = 100;
/** Weight of the latest call in the running estimate of a call's duration. */
const DURATION_WEIGHT = 0.2;

export class MergedCalls<I, R> {
  private readonly lanes = new Map<string, Lane<I, R>>();
  /**
   * How long a call has lately taken to answer (ms, a moving average over this isolate's
   * calls): a waiter's first look comes at about the time its answer is due, not every few
   * milliseconds from the start. Each look is a timer, and a crowd's checkout waiting 60 ms
   * ran about nine of them.
   */
  private callMs: number | undefined;

  constructor(private readonly options: MergedCallsOptions) {}

  /**
   * Queues `item` on `key`'s lane and answers with its share of a merged call, or with what
   * `answerHere` answers for it before a call would carry it. A request that leads sends its
   * own `call` and asks its own `answerHere`.
   */
  submit(key: string, item: I, call: MergedCall<I, R>, keepAlive: KeepAlive, answerHere?: AnswerHere<I, R>): Promise<R> {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { waiting: [], leader: undefined, sentAt: 0 };
      this.lanes.set(key, lane);
    }
    const ownLane = lane;
    const waiter: Waiter<I, R> = { item, deadline: Date.now() + this.options.maxWaitMs, carried: false };
    lane.waiting.push(waiter);
    if (this.leaderless(lane)) keepAlive(this.lead(key, lane, call, answerHere));

    return pickUp<R>(
      () => {
        if (waiter.outcome) return waiter.outcome;
        if (Date.now() >= waiter.deadline) {
          this.drop(key, ownLane, waiter);
          return { ok: false, error: new MergedCallTimeout(waiter.carried) };
        }
        if (!waiter.carried && this.leaderless(ownLane)) keepAlive(this.lead(key, ownLane, call, answerHere));
        return undefined;
      },
      this.options.pollMs,
      this.firstLookMs(ownLane, waiter),
    );
  }

  /**
   * When a new waiter first looks for its answer: its call's expected end, less a margin
   * (then it polls as before). Sent at once, that is one call's duration; queued behind the
   * call in flight, what is left of that one and then its own. At most FIRST_LOOK_MAX_MS, and
   * never later than the stall limit: a waiter must still notice a leader that stopped.
   * A queued item that `answerHere` answers is written when the call in flight lands, and
   * picked up at this same look: up to one call's duration after it was written.
   */
  private firstLookMs(lane: Lane<I, R>, waiter: Waiter<I, R>): number {
    const callMs = this.callMs;
    if (callMs === undefined) return this.options.pollMs;
    const expected = waiter.carried ? callMs : Math.max(0, lane.sentAt + callMs - Date.now()) + callMs;
    return Math.min(FIRST_LOOK_SHARE * expected, FIRST_LOOK_MAX_MS, this.options.stallMs);
  }

  private leaderless(lane: Lane<I, R>): boolean {
    return lane.leader === undefined || Date.now() - lane.sentAt > this.options.stallMs;
  }

  /** Takes a waiter that will not be sent any more off its lane, and the lane off the map when idle. */
  private drop(key: string, lane: Lane<I, R>, waiter: Waiter<I, R>): void {
    const queued = lane.waiting.indexOf(waiter);
    if (queued >= 0) lane.waiting.splice(queued, 1);
    this.forgetIfIdle(key, lane);
  }

  private forgetIfIdle(key: string, lane: Lane<I, R>): void {
    if (lane.leader === undefined && lane.waiting.length === 0 && this.lanes.get(key) === lane) this.lanes.delete(key);
  }

  /**
   * The next call's items: the longest waiting, skipping those whose request gave up or is
   * gone, and answering those `answerHere` can.
   */
  private nextBatch(lane: Lane<I, R>, answerHere: AnswerHere<I, R> | undefined): Waiter<I, R>[] {
    const now = Date.now();
    const batch: Waiter<I, R>[] = [];
    while (batch.length < this.options.maxItems && lane.waiting.length > 0) {
      const w = lane.waiting.shift() as Waiter<I, R>;
      if (now >= w.deadline) {
        w.outcome = { ok: false, error: new MergedCallTimeout(false) };
        continue;
      }
      const answer = answerHere?.(w.item);
      if (answer !== undefined) {
        w.outcome = { ok: true, value: answer };
        continue;
      }
      w.carried = true;
      batch.push(w);
    }
    return batch;
  }

  /** Sends call after call, from this request's context, while anyone waits. */
  private async lead(
    key: string,
    lane: Lane<I, R>,
    call: MergedCall<I, R>,
    answerHere: AnswerHere<I, R> | undefined,
  ): Promise<void> {
    const token = {};
    lane.leader = token;
    const until = Date.now() + this.options.leadMs;
    try {
      for (let calls = 0; calls < this.options.leadCalls && lane.leader === token && Date.now() < until; calls++) {
        const batch = this.nextBatch(lane, answerHere);
        if (batch.length === 0) break;
        const sentAt = Date.now();
        lane.sentAt = sentAt;
        try {
          const answers = await call(batch.map((w) => w.item));
          if (answers.length !== batch.length) {
            throw new Error(`a merged call answered ${answers.length} of ${batch.length} items`);
          }
          const took = Date.now() - sentAt;
          this.callMs = this.callMs === undefined ? took : this.callMs + DURATION_WEIGHT * (took - this.callMs);
          for (const [i, w] of batch.entries()) w.outcome = { ok: true, value: answers[i] as R };
        } catch (error) {
          for (const w of batch) w.outcome = { ok: false, error };
        }
      }
    } finally {
      if (lane.leader === token) lane.leader = undefined;
      this.forgetIfIdle(key, lane);
    }
  }
}
