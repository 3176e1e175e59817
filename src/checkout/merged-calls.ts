/**
 * Request merging on a hot key: the checkouts one isolate holds for one sale share one
 * Redis call. While a call is in flight, new arrivals wait; when it lands, the first of
 * them sends everyone waiting as the next call (group commit). An idle sale adds no delay:
 * a lone checkout goes out at once, as a batch of one. Under a stampede an isolate makes
 * about one call per round trip instead of one per buyer.
 *
 * Written by hand because it must follow workerd's rules, which no general batching
 * library knows. I/O belongs to the request that started it and an ended request's
 * pending work is cancelled, so a call is always sent from a waiting request's own
 * context (the hand-over promise's continuation runs there), never from the request that
 * just got its answer. A request waiting on nothing of its own is cancelled as hung, so
 * every waiter holds a timer of its own until its answer is in; the same timer bounds
 * the wait. And every waiter keeps its context alive (waitUntil) until then, so a buyer
 * who disconnects cannot cancel a call others wait on.
 */

/** The answer did not come within the wait limit. `sent`: the call may have run. */
export class MergedCallTimeout extends Error {
  constructor(readonly sent: boolean) {
    super(sent ? "the merged call did not answer in time" : "the merged call was not sent in time");
  }
}

/** Extends the calling request's life until the promise settles (ctx.waitUntil). */
export type KeepAlive = (work: Promise<unknown>) => void;

/** Sends one merged call: one answer per item, in the items' order. */
export type MergedCall<I, R> = (items: I[]) => Promise<R[]>;

interface Waiter<I, R> {
  item: I;
  answer: Deferred<R>;
  /** Resolved when it is this waiter's turn to send the next call. */
  turn: Deferred<void>;
}

interface Lane<I, R> {
  waiting: Waiter<I, R>[];
  /** A call is in flight or about to be sent. */
  busy: boolean;
  /** When the lane last sent a call or handed the turn over (epoch ms). */
  movedAt: number;
}

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (reason: unknown) => void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

export class MergedCalls<I, R> {
  private readonly lanes = new Map<string, Lane<I, R>>();

  /**
   * @param maxItems the most items one call carries; the rest go in the next.
   * @param maxWaitMs how long an item waits for its answer, queued and in flight. A lane
   *   that has not moved for this long is taken over by the next arrival, so a hand-over
   *   that never ran cannot strand the key in this isolate.
   */
  constructor(
    private readonly maxItems: number,
    private readonly maxWaitMs: number,
  ) {}

  /** Queues `item` on `key`'s lane and answers with its share of the merged call. */
  submit(key: string, item: I, call: MergedCall<I, R>, keepAlive: KeepAlive): Promise<R> {
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { waiting: [], busy: false, movedAt: 0 };
      this.lanes.set(key, lane);
    }
    const waiter: Waiter<I, R> = { item, answer: deferred(), turn: deferred() };
    lane.waiting.push(waiter);
    const ownLane = lane;
    const timer = setTimeout(() => {
      const queued = ownLane.waiting.indexOf(waiter);
      if (queued >= 0) ownLane.waiting.splice(queued, 1);
      waiter.answer.reject(new MergedCallTimeout(queued < 0));
    }, this.maxWaitMs);
    const done = () => clearTimeout(timer);
    keepAlive(waiter.answer.promise.then(done, done));
    // Registered now, in this request's context, so the call is sent from here.
    void waiter.turn.promise.then(() => this.send(key, ownLane, call));
    const now = Date.now();
    if (!lane.busy || now - lane.movedAt > this.maxWaitMs) {
      lane.busy = true;
      lane.movedAt = now;
      waiter.turn.resolve();
    }
    return waiter.answer.promise;
  }

  private async send(key: string, lane: Lane<I, R>, call: MergedCall<I, R>): Promise<void> {
    const batch = lane.waiting.splice(0, this.maxItems);
    lane.movedAt = Date.now();
    try {
      // Empty only when a taken-over turn runs late: its waiters were already served.
      if (batch.length === 0) return;
      const answers = await call(batch.map((w) => w.item));
      if (answers.length !== batch.length) {
        throw new Error(`a merged call answered ${answers.length} of ${batch.length} items`);
      }
      for (const [i, w] of batch.entries()) w.answer.resolve(answers[i] as R);
    } catch (err) {
      for (const w of batch) w.answer.reject(err);
    } finally {
      const next = lane.waiting[0];
      if (next) {
        lane.movedAt = Date.now();
        next.turn.resolve();
      } else {
        lane.busy = false;
        if (this.lanes.get(key) === lane) this.lanes.delete(key);
      }
    }
  }
}
