// The production model (npm run model): the same seed gives the same figures, and no design
// sells more than the stock.
import { describe, expect, it } from "vitest";
import { INPUTS } from "../../load/model/inputs.ts";
import { simulate } from "../../load/model/simulation.ts";
import { waitingRoomLoad } from "../../load/model/waiting-room.ts";

describe("the spike model", () => {
  it.each(["atomic", "durable-object", "durable-object-merged"] as const)(
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

  it.each(["atomic", "durable-object-merged"] as const)(
    "%s: a lane whose call answered sold out refuses its waiters with no further call, so the store decides little beyond the stock",
    (design) => {
      // Were the waiters sent, the store would decide 7,774 (atomic) or 12,797 buyers here.
      const outcome = simulate(design, 20_000, 7);
      expect(outcome.accepted).toBe(INPUTS.stock);
      expect(outcome.storeDecided).toBeLessThan(INPUTS.stock * 1.1);
    },
  );

  it.each(["atomic", "durable-object-merged"] as const)(
    "%s: a crowd smaller than the stock is all accepted and nothing sells out",
    (design) => {
      const outcome = simulate(design, 1_000, 3);
      expect(outcome.accepted).toBe(1_000);
      expect(outcome.sellOutMs).toBeNull();
    },
  );

  it("the merged object never oversells, even when its RPCs are slow enough to queue, and merges buyers into fewer RPCs", () => {
    const slow = { ...INPUTS, objectMsPerRpc: 5, objectMsPerBuyer: 0.5 } as Parameters<typeof simulate>[3];
    for (const inputs of [undefined, slow]) {
      const outcome = simulate("durable-object-merged", 30_000, 11, inputs);
      expect(outcome.accepted).toBe(INPUTS.stock);
      expect(outcome.usage.objectRowsWritten).toBe(INPUTS.stock * INPUTS.objectRowsPerAccepted);
      expect(outcome.storeCalls).toBe(outcome.usage.objectRequests);
      expect(outcome.storeCalls).toBeLessThan(outcome.storeDecided);
      expect(outcome.storeDecided).toBeLessThanOrEqual(30_000);
      // The object is the record: nothing goes through Upstash, a queue or D1.
      expect(outcome.usage).toMatchObject({ upstashCommands: 0, queueMessages: 0, d1RowsWritten: 0 });
    }
  });

  it("atomic: every Upstash command is counted by kind, and its busiest second counts them all", () => {
    const outcome = simulate("atomic", 20_000, 7);
    const { scriptCalls, settlementClears, counters } = outcome.commandsByKind;
    expect(scriptCalls + settlementClears + counters).toBe(outcome.usage.upstashCommands);
    expect(scriptCalls).toBe(outcome.storeCalls);
    expect(settlementClears).toBe(outcome.usage.queueMessages * INPUTS.settlementCommandsPerMessage);
    expect(outcome.peakCommandsPerSec).toBeGreaterThanOrEqual(outcome.peakStoreRequestsPerSec);
  });

  it("the object one RPC per attempt decides every attempt itself, one RPC each", () => {
    const outcome = simulate("durable-object", 10_000, 5);
    expect(outcome.storeCalls).toBe(10_000);
    expect(outcome.storeDecided).toBe(10_000);
    expect(outcome.usage.objectRequests).toBe(10_000);
  });
});

it("a million-buyer waiting room stays within one database's commands per second in every phase, the polls far below one command each", () => {
  const phases = waitingRoomLoad();
  for (const p of phases) expect(p.total, p.phase).toBeLessThanOrEqual(p.limit);
  const pre = phases[0];
  expect(pre?.commandsPerSec.progress).toBeLessThan((pre?.workerRequestsPerSec ?? 0) / 50);
});
