import { weightOf } from "./isolate-cache";

/**
 * Token buckets kept in the isolate's memory: a caller over its rate is refused with no
 * network at all. Each isolate limits on its own, so the effective global limit is this
 * one times the isolates serving a caller; that is the point: it costs nothing and stops
 * a single client hammering one edge location. Hand-written: no limiter library keeps
 * its state in plain isolate memory without a store round trip.
 */
export class LocalTokenBuckets {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  /** What the buckets weigh together (weightOf): a million distinct callers stay within maxBytes. */
  private bytes = 0;

  constructor(
    readonly rate: number,
    readonly burst: number,
    private readonly maxKeys = 50_000,
    private readonly maxBytes = 4 << 20,
  ) {}

  /** Takes one token for `key`; when none is left, says how long until one is. */
  take(key: string, now = Date.now()): { ok: true } | { ok: false; retryAfterMs: number } {
    const bucket = this.buckets.get(key);
    const tokens = bucket ? Math.min(this.burst, bucket.tokens + ((now - bucket.at) * this.rate) / 1000) : this.burst;
    if (tokens < 1) return { ok: false, retryAfterMs: Math.ceil(((1 - tokens) * 1000) / this.rate) };
    // re-insert: Map order doubles as least-recently-used order
    if (this.buckets.delete(key)) this.bytes -= weightOf(key, 0);
    while (this.buckets.size > 0 && (this.buckets.size >= this.maxKeys || this.bytes + weightOf(key, 0) > this.maxBytes)) {
      const oldest = this.buckets.keys().next();
      if (oldest.done) break;
      this.buckets.delete(oldest.value);
      this.bytes -= weightOf(oldest.value, 0);
    }
    this.buckets.set(key, { tokens: tokens - 1, at: now });
    this.bytes += weightOf(key, 0);
    return { ok: true };
  }

  /** Gives back a token taken for a request that turned out not to need one. */
  refund(key: string): void {
    const bucket = this.buckets.get(key);
    if (bucket) bucket.tokens = Math.min(this.burst, bucket.tokens + 1);
  }
}
