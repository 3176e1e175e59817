// The penetration guard while the catalog's Bloom filter is lost. Until the cron has refilled
// it (src/sales/bloom-upkeep.ts: a bounded number of pages per run), the filter cannot rule an
// id out, so each lookup of a sale id no cache holds would read D1: one query per distinct id,
// which is exactly what a crawl of random ids sends. Until then such lookups spend from two
// budgets: this isolate's (in memory, no network) and the deployment's (a sliding window in
// Redis, one round trip, paid only while the filter is lost). A lookup over budget is refused,
// not guessed: the route answers 503 and the buyer's page retries.
import { LocalTokenBuckets } from "../isolate/token-buckets";
import type { Redis } from "../redis/client";
import { SlidingWindow } from "../redis/sliding-window";
import { log } from "../shared/log";
import { Unavailable } from "../shared/unavailable";

export interface LookupBudgetLimits {
  /** D1 lookups per second one isolate may make for ids the filter cannot rule out, and its burst. */
  perIsolate: { rate: number; burst: number };
  /** The same for every isolate together, per second (D1 serves about 1,000 queries/s, the sales' own included). */
  totalPerSecond: number;
}

/** @default: a crawl costs D1 at most 50 queries/s in all while the filter is being refilled. */
export const UNFILTERED_LOOKUPS: LookupBudgetLimits = { perIsolate: { rate: 5, burst: 20 }, totalPerSecond: 50 };

/** Where the deployment's window counts (the catalog's hash tag). */
const TOTAL_PREFIX = "fs:{catalog}:unfiltered-lookups";

/** How often an isolate logs that lookups are refused: a crawl is refused thousands of times a second. */
const REFUSAL_LOG_EVERY_MS = 10_000;

/** Thrown by spend() over either budget: a 503, logged by spend() a line every few seconds, not once each. */
export class LookupBudgetSpent extends Unavailable {
  constructor(readonly budget: "isolate" | "total") {
    super("the sale cannot be read right now", { logged: true });
    this.name = "LookupBudgetSpent";
  }
}

/** One isolate's side of the budget (kept with its other reads: src/sales/catalog.ts, IsolateReads). */
export class UnfilteredLookupBudget {
  private readonly isolate: LocalTokenBuckets;
  private readonly totals = new WeakMap<Redis, SlidingWindow>();
  private refusedSinceLog = 0;
  private loggedAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly limits: LookupBudgetLimits = UNFILTERED_LOOKUPS) {
    this.isolate = new LocalTokenBuckets(limits.perIsolate.rate, limits.perIsolate.burst, 1);
  }

  /** Takes one D1 lookup from both budgets, this isolate's first; throws LookupBudgetSpent when either is spent. */
  async spend(redis: Redis): Promise<void> {
    if (!this.isolate.take("d1").ok) throw this.refused("isolate");
    const { success } = await this.totalFor(redis).limit("d1");
    if (!success) throw this.refused("total");
  }

  /** The refusal, logged once per REFUSAL_LOG_EVERY_MS with how many there were since. */
  private refused(budget: LookupBudgetSpent["budget"]): LookupBudgetSpent {
    this.refusedSinceLog++;
    const now = Date.now();
    if (now - this.loggedAt >= REFUSAL_LOG_EVERY_MS) {
      log.warn("lookups of unknown sale ids over budget while the Bloom filter is refilled", {
        budget,
        refused: this.refusedSinceLog,
      });
      this.loggedAt = now;
      this.refusedSinceLog = 0;
    }
    return new LookupBudgetSpent(budget);
  }

  private totalFor(redis: Redis): SlidingWindow {
    let total = this.totals.get(redis);
    if (!total) {
      total = new SlidingWindow({
        redis,
        // Sliding, not fixed: a fixed window's key lives one window, so a call that reaches Redis
        // over a second late opens its expired window again and spends its budget twice; these
        // keys outlive their window by two more seconds.
        tokens: this.limits.totalPerSecond,
        windowMs: 1_000,
        prefix: TOTAL_PREFIX,
        // Fail closed: a budget Redis cannot confirm is not spent (the default lets it pass after 5 s).
        timeoutMs: 0,
      });
      this.totals.set(redis, total);
    }
    return total;
  }
}
