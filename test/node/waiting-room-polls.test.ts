import { afterAll, beforeAll, expect, it } from "vitest";
import { type Stack, startStack } from "../../dev/stack/local-stack.ts";
import { measurePasslessCost, measurePollCost } from "../../load/runner/waiting-room-polls.ts";

let stack: Stack;

beforeAll(async () => {
  // One client sends every poll: no per-user limit here.
  stack = await startStack({ vars: { USER_RATE_LIMIT: "0" } });
});
afterAll(async () => {
  await stack?.stop();
});

it("1,000 polls of the waiting room from one isolate cost a read of the line's progress per second, never one per poll", async () => {
  const cost = await measurePollCost(stack);
  // At most one script call per second the burst lasts, and two when it fits in one (a window may straddle a refresh).
  const seconds = Math.ceil(cost.elapsedMs / 1_000);
  expect(cost.roundTrips).toBeGreaterThanOrEqual(1);
  expect(cost.roundTrips).toBeLessThanOrEqual(Math.max(2, seconds + 1));
  console.log(`queue polls: ${cost.polls} polls, ${cost.roundTrips} round trips, ${Math.round(cost.elapsedMs)} ms`);
});

it("checkouts without a pass on a queued sale are refused in the isolate: about two Redis calls a second, not one each", async () => {
  const cost = await measurePasslessCost(stack);
  // Per clock second the burst touches: one script call that learns it again (the memo keeps a
  // fact a second) and one write of the console's counters of local refusals; and the last
  // write. A burst lasting s seconds by the stopwatch touches up to s + 1 clock seconds.
  const clockSeconds = Math.ceil(cost.elapsedMs / 1_000) + 1;
  expect(cost.roundTrips).toBeLessThanOrEqual(2 * clockSeconds + 1);
  expect(cost.roundTrips).toBeLessThan(cost.polls / 10);
  console.log(
    `queue bots: ${cost.polls} checkouts without a pass, ${cost.roundTrips} round trips, ${Math.round(cost.elapsedMs)} ms`,
  );
});
