// The production model (npm run model): the same seed gives the same figures, and neither
// design sells more than the stock.
import { describe, expect, it } from "vitest";
import { INPUTS } from "../../load/model/inputs.ts";
import { simulate } from "../../load/model/simulation.ts";
import { waitingRoomLoad } from "../../load/model/waiting-room.ts";

describe("the spike model", () => {
  it.each(["atomic", "durable-object"] as const)(
    "%s: deterministic for a seed, sells exactly the stock to a larger crowd",
    (design) => {
      const first = simulate(design, 20_000, 7);
      expect(simulate(design, 20_000, 7)).toEqual(first);
      expect(first.accepted).toBe(INPUTS.stock);
      expect(first.sellOutMs).not.toBeNull();
      expect(first.p99Ms).toBeGreaterThanOrEqual(first.p50Ms);
      expect(first.usage.workerRequests).toBe(20_000);
    },
  );

  it("a crowd smaller than the stock is all accepted and nothing sells out", () => {
    const outcome = simulate("atomic", 1_000, 3);
    expect(outcome.accepted).toBe(1_000);
    expect(outcome.sellOutMs).toBeNull();
  });
});

it("a million-buyer waiting room stays within one database's commands per second in every phase, the polls far below one command each", () => {
  const phases = waitingRoomLoad();
  for (const p of phases) expect(p.total, p.phase).toBeLessThanOrEqual(p.limit);
  const pre = phases[0];
  expect(pre?.commandsPerSec.progress).toBeLessThan((pre?.workerRequestsPerSec ?? 0) / 50);
});
