import { weightOf } from "./isolate-cache";

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
 * map entry holding a number, not an object.
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
    if (known === undefined) this.makeRoom(key);
    else this.fullAt.delete(key);
    this.fullAt.set(key, fullAt + this.refillMs);
    return TAKEN;
  }

  /** Gives back a token taken for a request that turned out not to need one. */
  refund(key: string): void {
    const fullAt = this.fullAt.get(key);
    if (fullAt !== undefined) this.fullAt.set(key, fullAt - this.refillMs);
  }

  /** Evicts the least recently used buckets until a new one for `key` fits, and counts it in. */
  private makeRoom(key: string): void {
    const weight = weightOf(key, 0);
    while (this.fullAt.size > 0 && (this.fullAt.size >= this.maxKeys || this.bytes + weight > this.maxBytes)) {
      const oldest = this.fullAt.keys().next();
      if (oldest.done) break;
      this.fullAt.delete(oldest.value);
      this.bytes -= weightOf(oldest.value, 0);
    }
    this.bytes += weight;
  }
}
