import { afterAll, beforeAll, expect, it } from "vitest";
import { type Stack, startStack } from "../../dev/stack/local-stack.ts";
import { measureOrderReads, measureQuietPolls } from "../../load/runner/global-limits.ts";

const PER_USER = 10;
let stack: Stack;

beforeAll(async () => {
  // Order reads limited per user and (far out of reach) per address, so both limits are
  // counted; the isolate's per-user bucket off, so the global layer alone answers.
  stack = await startStack({
    vars: { USER_RATE_LIMIT: "0", ORDER_READS_PER_USER_PER_MIN: String(PER_USER), ORDER_READS_PER_IP_PER_MIN: "1000000" },
  });
});
afterAll(async () => {
  await stack?.stop();
});

it("a limited route costs one round trip for both limits; a blocked caller costs none while its block lasts", async () => {
  const users = 10;
  const allowed = await measureOrderReads(stack, { users, perUser: PER_USER, tag: "a", width: 1 });
  // Each user once per batch: its first refusal, from Redis, lands before its next request.
  const blocked = await measureOrderReads(stack, { users, perUser: PER_USER, tag: "a", width: users });
  console.log(
    `global limits: ${allowed.roundTrips} round trips for ${allowed.requests} allowed reads, ${blocked.roundTrips} for ${blocked.requests} blocked`,
  );
  // Fresh users: the allowance, all of it (a window boundary moves counts, never adds any).
  expect(allowed.admitted).toBe(allowed.requests);
  // One at a time, the user's and the address's limit fold into one request; beside them the
  // script's first run, which finds it not yet loaded (EVALSHA, then EVAL), once or twice.
  expect(allowed.roundTrips).toBeGreaterThanOrEqual(allowed.requests);
  expect(allowed.roundTrips).toBeLessThanOrEqual(allowed.requests + 2);
  // Blocked: only each user's first refusal asks Redis (which says so); the rest never do. A
  // window boundary inside the run lets each user at most one more, and its block asked again.
  expect(blocked.admitted).toBeLessThanOrEqual(users);
  expect(blocked.roundTrips).toBeLessThanOrEqual(users + 2 * blocked.admitted);
  expect(blocked.roundTrips).toBeLessThan(blocked.requests / 4);
});

it("bots turned away at the join (failed human check, deny rule) never get a unit, and their polls in the line cost no Redis command", async () => {
  const cost = await measureQuietPolls(stack);
  console.log(
    `quiet polls: ${cost.polls} polls by ${cost.bots} bots, ${cost.roundTrips} round trips, ${Math.round(cost.elapsedMs)} ms`,
  );
  expect(cost.unitsToBots).toBe(0);
  // The line's progress, read at most once a second per isolate whoever polls (two when the
  // burst fits in one second: a window may straddle a refresh); never one per poll.
  const seconds = Math.ceil(cost.elapsedMs / 1_000);
  expect(cost.roundTrips).toBeLessThanOrEqual(Math.max(2, seconds + 1));
});
