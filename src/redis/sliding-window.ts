// A sliding window counted in Redis, for limits that must hold across every isolate and
// location (src/admission/global-limits.ts, src/sales/lookup-budget.ts). It is
// @upstash/ratelimit's single-region slidingWindow (2.2.0): its limit(), its
// keys, its scripts' counting (lua/sliding-window.lua, both in one), its ephemeral cache and its timeout,
// and nothing else of it. Written here because the library's one class brings every algorithm,
// multi-region, deny lists and analytics (with @upstash/core-analytics) into the Worker, about
// a fourteenth of its bundle, for this one window. The library stays a dev dependency:
// test/gateway/sliding-window.test.ts runs both on the same keys and they count alike.
import type { Redis } from "@upstash/redis/cloudflare";
import { LUA, runScript } from "./scripts";

export interface WindowVerdict {
  success: boolean;
  /** The limit (0 on a timeout). */
  limit: number;
  remaining: number;
  /** When the current window ends (ms since the epoch; 0 on a timeout). */
  reset: number;
  /**
   * "timeout": Redis did not answer within timeoutMs, and success is true (the library's
   * fail-open answer); "cacheBlock": refused from the ephemeral cache, with no Redis command.
   */
  reason?: "timeout" | "cacheBlock";
}

export interface SlidingWindowOptions {
  redis: Redis;
  /** Requests allowed per window. */
  tokens: number;
  windowMs: number;
  /** Keys are `<prefix>:<identifier>:<window number>`. */
  prefix: string;
  /**
   * Identifiers Redis refused, by `<prefix>:<identifier>`, to when their window resets: refused
   * again from here, with no Redis command, until then. A Map of its own when not given.
   */
  ephemeralCache?: Map<string, number>;
  /** limit() answers success with reason "timeout" when Redis takes longer; 0: no bound. */
  timeoutMs: number;
}

type Counts = [remaining: number, limit: number];

export class SlidingWindow {
  private readonly cache: Map<string, number>;

  constructor(private readonly options: SlidingWindowOptions) {
    this.cache = options.ephemeralCache ?? new Map();
  }

  /** Counts one request of `identifier`. Its script is sent at once, so calls made together share a round trip. */
  async limit(identifier: string): Promise<WindowVerdict> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const counted = this.count(`${this.options.prefix}:${identifier}`);
      if (!(this.options.timeoutMs > 0)) return await counted;
      const timedOut = new Promise<WindowVerdict>((resolve) => {
        timer = setTimeout(
          () => resolve({ success: true, limit: 0, remaining: 0, reset: 0, reason: "timeout" }),
          this.options.timeoutMs,
        );
      });
      return await Promise.race([counted, timedOut]);
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  private async count(key: string): Promise<WindowVerdict> {
    const { now, keys, reset } = this.windowOf(key);
    const blockedUntil = this.cache.get(key);
    if (blockedUntil !== undefined) {
      if (blockedUntil >= now)
        return { success: false, limit: this.options.tokens, remaining: 0, reset: blockedUntil, reason: "cacheBlock" };
      this.cache.delete(key);
    }
    const [remaining, limit] = await runScript<Counts>(this.options.redis, LUA.slidingWindow, keys, [...this.args(now), "1"]);
    const success = remaining >= 0;
    if (!success) this.cache.set(key, reset);
    return { success, limit, remaining: Math.max(0, remaining), reset };
  }

  /** This window's and the previous one's keys, and when this one ends. */
  private windowOf(key: string): { now: number; keys: string[]; reset: number } {
    const now = Date.now();
    const window = Math.floor(now / this.options.windowMs);
    return { now, keys: [`${key}:${window}`, `${key}:${window - 1}`], reset: (window + 1) * this.options.windowMs };
  }

  private args(now: number): string[] {
    return [String(this.options.tokens), String(now), String(this.options.windowMs)];
  }
}
