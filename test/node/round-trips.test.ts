import { afterAll, beforeAll, expect, it } from "vitest";
import { type Stack, startStack } from "../../dev/stack/local-stack.ts";
import { measureRoundTrips, type OutcomeCost } from "../../load/runner/round-trips.ts";

let stack: Stack;
let costs: Map<string, OutcomeCost>;

beforeAll(async () => {
  stack = await startStack({ vars: { USER_RATE_LIMIT: "0" } });
  costs = new Map((await measureRoundTrips(stack)).map((c) => [c.outcome, c]));
});
afterAll(async () => {
  await stack?.stop();
});

const roundTrips = (outcome: string) => {
  const cost = costs.get(outcome);
  if (!cost) throw new Error(`no figure for ${outcome}`);
  return cost.roundTrips;
};

it("an accepted checkout costs one Upstash round trip (plus one shared by its settlement batch), of a variant too", () => {
  expect(roundTrips("accepted")).toBe(2);
  expect(roundTrips("accepted (a variant)")).toBe(2);
});

it("a stampede on one sale shares script calls: far less than one round trip per buyer", () => {
  const perBuyer = roundTrips("accepted, 200 buyers at once (per buyer)");
  expect(perBuyer).toBeGreaterThan(0);
  expect(perBuyer).toBeLessThan(0.25);
});

it("a code holder in a presale lane costs the same one round trip, and merged calls carry the codes", () => {
  expect(roundTrips("accepted with an access code (a presale lane)")).toBe(2);
  const perHolder = roundTrips("accepted with codes, 50 holders at once (per buyer)");
  expect(perHolder).toBeGreaterThan(0);
  expect(perHolder).toBeLessThan(0.5);
});

it("warm-isolate refusals cost no round trip of their own: a burst shares one write of the console's counters", () => {
  for (const outcome of [
    "repeat buyer (warm)",
    "sold out (warm)",
    "sold-out variant (warm)",
    "ended (warm)",
    "rate limited (warm)",
  ]) {
    expect(roundTrips(outcome), outcome).toBeLessThanOrEqual(1 / 20);
  }
});

it("a first refusal costs exactly the one script call that teaches the isolate", () => {
  expect(roundTrips("ended (first)")).toBe(1);
  expect(roundTrips("rate limited (first)")).toBe(1);
});

it("a polled sale page reads Redis at most once per isolate per 500 ms", () => {
  const polls = costs.get("sale page, 200 polls x 2 (600 ms apart)");
  // Two bursts 600 ms apart: two reads when the bursts are quick, one more per 500 ms a slow
  // machine stretches them, never one per poll.
  const windows = Math.ceil((polls?.elapsedMs ?? 0) / 500);
  expect(polls?.roundTrips).toBeLessThanOrEqual(Math.max(2, windows));
  expect(polls?.roundTrips).toBeGreaterThanOrEqual(1);
});
