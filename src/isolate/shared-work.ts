/**
 * How requests of one isolate share work (docs/architecture.md, "Sharing work inside an
 * isolate"). workerd ties I/O to the request that started it, so:
 * - A request never awaits another request's I/O: it would have nothing of its own pending,
 *   and the runtime cancels it as hung; and when that other request is cancelled (its client
 *   went away), the answer never comes. Requests share plain data only: the one doing the
 *   work writes its outcome into a slot, and each waiter picks it up from a timer of its own
 *   (`pickUp`), which is pending I/O of its own and bounds its wait.
 * - The work is kept alive by the request doing it (its waitUntil), so a buyer who closes the
 *   tab does not cancel what others wait on.
 * - A waiter whose worker stalled (cancelled, or just slow) stops waiting after `stallMs`
 *   and does the work itself: nobody waits on anyone else for longer than that.
 * Hand-written: no library knows workerd's rule about I/O and requests.
 */

/** Extends the calling request's life until the promise settles (ctx.waitUntil). */
export type KeepAlive = (work: Promise<unknown>) => void;

/** What a waiter picks up: an answer, or the error the work failed with. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/**
 * Settles from the caller's own timers: `look` runs `firstMs` from now (by default
 * `pollMs`), then again after 2x `pollMs` and every 4x from there, until it returns an outcome, or a
 * promise of the caller's own work to settle with. Every look is a timer of the request's
 * own, and a timer costs the isolate CPU: a caller that knows about when the outcome will be
 * there looks first at about then.
 */
export function pickUp<T>(look: () => Outcome<T> | Promise<T> | undefined, pollMs: number, firstMs = pollMs): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let delay = pollMs;
    const poll = () => {
      const seen = look();
      if (seen instanceof Promise) return resolve(seen);
      if (seen) return seen.ok ? resolve(seen.value) : reject(seen.error);
      delay = Math.min(delay * 2, pollMs * 4);
      setTimeout(poll, delay);
    };
    setTimeout(poll, Math.max(pollMs, firstMs));
  });
}

export interface SharedWorkOptions {
  /** Past this, a waiter stops waiting for the request doing the work and does it itself. */
  stallMs: number;
  /** How soon a waiter first looks for the outcome; it backs off to 4x. */
  pollMs: number;
}

/** One run of the work: its outcome slot, written by the request that runs it. */
interface Run<T> {
  startedAt: number;
  outcome?: Outcome<T>;
}

/** Work done once per key at a time in this isolate, whatever the number of requests asking. */
export class SharedWork<T> {
  private readonly running = new Map<string, Run<T>>();

  constructor(private readonly options: SharedWorkOptions) {}

  /** Keys with work in flight (bounded by the keys callers ask for at once). */
  get size(): number {
    return this.running.size;
  }

  /**
   * `work`'s answer for `key`: run by this request when nobody runs it, else the outcome of
   * the request that does, picked up from this request's own timers.
   */
  run(key: string, work: () => Promise<T>, keepAlive: KeepAlive): Promise<T> {
    let watched = this.running.get(key);
    if (!watched || this.stalled(watched)) return this.start(key, work, keepAlive);
    let joinedTakeover = false;
    return pickUp(() => {
      if (watched?.outcome) return watched.outcome;
      if (watched && !this.stalled(watched)) return undefined;
      // Another waiter took over already: wait for it, once; after that, do the work.
      const takeover = this.running.get(key);
      if (!joinedTakeover && takeover && takeover !== watched && !this.stalled(takeover)) {
        joinedTakeover = true;
        watched = takeover;
        return undefined;
      }
      return this.start(key, work, keepAlive);
    }, this.options.pollMs);
  }

  /** Starts `work` for `key` unless a request is doing it already; nobody waits for it. */
  runInBackground(key: string, work: () => Promise<T>, keepAlive: KeepAlive): void {
    const current = this.running.get(key);
    if (!current || this.stalled(current)) void this.start(key, work, keepAlive).catch(() => undefined);
  }

  private stalled(run: Run<T>): boolean {
    return Date.now() - run.startedAt > this.options.stallMs;
  }

  /** Runs `work` from the calling request's context and publishes its outcome for the waiters. */
  private start(key: string, work: () => Promise<T>, keepAlive: KeepAlive): Promise<T> {
    const run: Run<T> = { startedAt: Date.now() };
    this.running.set(key, run);
    const started = work().then(
      (value) => {
        run.outcome = { ok: true, value };
        return value;
      },
      (error: unknown) => {
        run.outcome = { ok: false, error };
        throw error;
      },
    );
    const settled = started
      .catch(() => undefined)
      .finally(() => {
        if (this.running.get(key) === run) this.running.delete(key);
      });
    keepAlive(settled);
    return started;
  }
}
