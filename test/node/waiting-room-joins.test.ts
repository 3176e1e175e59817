// A waiting-room join costs Redis the same number of commands on a sale split for a thousand
// joiners and on one split for a million (thousands of buckets under a small record limit).
import { expect, it } from "vitest";
import { measureJoinCost } from "../../load/runner/waiting-room-joins.ts";

it("a join costs a fixed number of Redis commands, whatever the sale's bucket count", async () => {
  const [small, large] = await measureJoinCost([1_000, 1_000_000], { joins: 50 });
  if (!small || !large) throw new Error("no figures");
  console.log(`join commands: ${JSON.stringify(small)} / ${JSON.stringify(large)}`);
  expect(small.buckets).toBeLessThan(10);
  expect(large.buckets).toBeGreaterThan(3_000);
  // EVALSHA, TIME, the sale's settings, the running total, the joiner's place, then its writes:
  // the rank and line entry (fifo), or the pre-queue entry and its running totals (random).
  for (const cost of [small, large]) {
    expect(cost.fifo).toBe(8);
    expect(cost.preQueue).toBe(9);
    // Placed after the start: one BITFIELD read of the sizes before its bucket (none in bucket 0) and its rank.
    expect(cost.placedAfterStart).toBeGreaterThanOrEqual(6);
    expect(cost.placedAfterStart).toBeLessThanOrEqual(7);
  }
});
