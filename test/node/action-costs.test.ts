// What the deterministic actions cost in what the platforms bill, counted on a stack with the
// meter around the Worker (load/cost/actions.ts, as `npm run cost` and `npm run bench` count
// them): a change that adds a round trip, a command or a D1 write to a join, a poll, a warm
// refusal or a pay fails here, and so does an expiry whose D1 reads grow with the orders held.
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Stack, startStack } from "../../dev/stack/local-stack.ts";
import { type ActionCost, type ActionName, countingVars, measureActions, measureExpiryBeside } from "../../load/cost/actions.ts";
import { meterWrapper } from "../../load/runner/meter.ts";

let stack: Stack;
let costs: Map<ActionName, ActionCost>;
let crossCheck: { gatewayCommands: number; meterCommands: number };

beforeAll(async () => {
  stack = await startStack({ vars: countingVars(), wrapper: meterWrapper() });
  const measured = await measureActions(stack, { only: ["join", "poll", "warm-refusal", "pay", "expiry"], joins: 10, polls: 60 });
  costs = new Map(measured.actions.map((a) => [a.action, a]));
  crossCheck = measured.crossCheck;
});
afterAll(async () => {
  await stack?.stop();
});

const costOf = (action: ActionName): ActionCost => {
  const found = costs.get(action);
  if (!found) throw new Error(`no count for ${action}`);
  return found;
};
/** The limits' sliding-window script (lua/sliding-window.lua): per user and per client address. */
const LIMITS = "EVALSHA sliding-window";

it("counts every Upstash command the gateway saw, from the Worker's side too", () => {
  expect(crossCheck.meterCommands).toBe(crossCheck.gatewayCommands);
  expect(crossCheck.gatewayCommands).toBeGreaterThan(0);
});

it("a queue join costs one request, three round trips and four commands, whatever the line's size: its limits, the place held, the join", () => {
  const { counts } = costOf("join");
  expect(counts).toMatchObject({ workerRequests: 1, upstashRequests: 3, upstashCommands: 4, queueMessages: 0, d1RowsWritten: 0 });
  expect(counts.commands).toEqual({ [LIMITS]: 2, HGET: 1, "EVALSHA waiting-room-join": 1 });
});

it("a waiting page poll costs its request and nothing in Redis; the line's progress is read at most once a second per isolate", () => {
  const poll = costOf("poll");
  expect(poll.counts).toMatchObject({
    workerRequests: 1,
    subrequests: 0,
    upstashCommands: 0,
    queueMessages: 0,
    d1RowsWritten: 0,
  });
  // Read over three waves a second apart: one read a second, and one more where a wave straddles a second.
  expect(poll.shared?.commands).toEqual({ "EVALSHA waiting-room-progress": expect.any(Number) });
  expect(poll.shared?.upstashCommands).toBeGreaterThan(0);
  expect(poll.shared?.upstashCommands).toBeLessThanOrEqual(4 / 3);
});

it("a warm refusal costs its request, no D1, and no round trip of its own: a burst shares the counters' write and at most one memo refresh", () => {
  const refusal = costOf("warm-refusal");
  expect(refusal.counts).toMatchObject({ workerRequests: 1, queueMessages: 0, d1Statements: 0 });
  expect(refusal.units * refusal.counts.upstashRequests).toBeLessThanOrEqual(2);
  for (const command of Object.keys(refusal.counts.commands))
    expect(["EVALSHA checkout", "HINCRBY", "EXPIRE"]).toContain(command);
});

it("a pay costs one request, two round trips (its limits, then its claim) and three commands, and the same D1 writes every time", () => {
  const { counts } = costOf("pay");
  expect(counts).toMatchObject({ workerRequests: 1, subrequests: 2, upstashRequests: 2, upstashCommands: 3, queueMessages: 0 });
  expect(counts.commands).toEqual({ [LIMITS]: 2, SET: 1 });
  expect(counts.d1RowsWritten).toBe(12);
});

/** Orders held beside an expiry: had the expiry read them, each of its few orders would read tens of rows more. */
const HELD = 200;

it(`an expiry reads the orders it expires, not the others held: its D1 rows per order stay put beside ${HELD} orders awaiting payment`, async () => {
  const expiry = costOf("expiry");
  const beside = await measureExpiryBeside(stack, HELD);
  expect(expiry.counts.d1RowsWritten).toBeGreaterThan(0);
  expect(beside.counts.d1RowsWritten).toBe(expiry.counts.d1RowsWritten);
  // Up to twice: its orders may settle in two batches, or a job arrive early and run again.
  expect(beside.counts.d1RowsRead).toBeLessThanOrEqual(2 * expiry.counts.d1RowsRead);
});
