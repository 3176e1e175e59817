import { weightOf } from "./isolate-cache";

/** What a bucket weighs (weightOf's measure): its key and a number. */
const bucketWeight = (key: string): number => weightOf(key, 0);

/** What take() answers when a token was there: one shared object, nothing allocated per request. */
const TAKEN = Object.freeze({ ok: true as const });

/**
 * Token buckets kept in the isolate's memory: a caller over its rate is refused with no
 * network at all. Each isolate limits on its own, so the effective global limit is this
 * one times the isolates serving a caller; that is the point: it costs nothing and stops
 * a single client hammering one edge location. Hand-written: no limiter library keeps
 * its state in plain isolate memory without a store round trip.
 *
 * Each bucket is one number, the time at which it would be full again (the generic cell
 * rate algorithm: exactly a token bucket of `burst` tokens refilled at `rate` a second).
 * A flash sale's crowd is mostly callers never seen before, and a new caller then costs one
 * map entry holding a number, not an object. A bucket full again is the same as none, so it
 * is dropped when a new caller comes: the map holds the callers of the last burst/rate
 * seconds at most (a one-request caller at 20/s is dropped 50 ms on), not the last 50,000.
 */
export class LocalTokenBuckets {
  /** Per key: when the bucket is full again (ms after `origin`); a time past means full. */
  private readonly fullAt = new Map<string, number>();
  /**
   * The first take's time: times are kept relative to it, small enough that a refill of a
   * microsecond is not lost in the rounding of an epoch-sized number.
   */
  private origin: number | undefined;
  /** What the buckets weigh together (weightOf): a million distinct callers stay within maxBytes. */
  private bytes = 0;
  /** Time one token takes to come back (ms). */
  private readonly refillMs: number;

  constructor(
    readonly rate: number,
    readonly burst: number,
    private readonly maxKeys = 50_000,
    private readonly maxBytes = 4 << 20,
  ) {
    this.refillMs = 1000 / rate;
  }

  /** Takes one token for `key`; when none is left, says how long until one is. */
  take(key: string, now = Date.now()): { readonly ok: true } | { ok: false; retryAfterMs: number } {
    this.origin ??= now;
    const at = now - this.origin;
    const known = this.fullAt.get(key);
    const fullAt = known === undefined || known < at ? at : known;
    // Taking a token pushes "full again" one refill later; a bucket may be at most `burst` refills from full.
    const over = fullAt + this.refillMs - at - this.burst * this.refillMs;
    if (over > 1e-6) return { ok: false, retryAfterMs: Math.ceil(over) };
    // re-insert: Map order doubles as least-recently-used order
    if (known === undefined) this.makeRoom(key, at);
    else this.fullAt.delete(key);
    this.fullAt.set(key, fullAt + this.refillMs);
    return TAKEN;
  }

  /** Gives back a token taken for a request that turned out not to need one. */
  refund(key: string): void {
    const fullAt = this.fullAt.get(key);
    if (fullAt !== undefined) this.fullAt.set(key, fullAt - this.refillMs);
  }

  /** How many callers' buckets it holds (full ones are dropped as new callers come). */
  get size(): number {
    return this.fullAt.size;
  }

  /**
   * Drops the least recently used buckets that are full again at `at`, then evicts the least
   * recently used until a new one for `key` fits, and counts it in. Stops at the first bucket
   * that is neither: each take drops at most what earlier takes added.
   */
  private makeRoom(key: string, at: number): void {
    const weight = bucketWeight(key);
    for (const [oldest, fullAt] of this.fullAt) {
      const fits = this.fullAt.size < this.maxKeys && this.bytes + weight <= this.maxBytes;
      if (fits && fullAt > at) break;
      this.fullAt.delete(oldest);
      this.bytes -= bucketWeight(oldest);
    }
    this.bytes += weight;
  }
}
