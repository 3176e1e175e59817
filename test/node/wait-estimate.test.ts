// The waiting room's estimates (src/admission/wait-estimate.ts) from lines described by what
// lua/waiting-room-progress.lua measures: the wait at the measured pace or through rounds of
// no-shows, and whether the units will likely be gone first. A drop on the real stack measures
// their error: test/node/drop-operations.test.ts and `npm run load -- --scenario drop`.
import { describe, expect, it } from "vitest";
import { lineEstimate, type MeasuredLine } from "../../src/admission/wait-estimate.ts";

const NOW = 1_000_000_000;

/** A live line: 100 units, nothing let in over a minute's window, nothing held, nothing resolved. */
const line = (over: Partial<MeasuredLine> = {}): MeasuredLine => ({
  startsAt: NOW - 60_000,
  endsAt: NOW + 3_600_000,
  state: "active",
  remaining: 100,
  used: 0,
  fresh: 0,
  noShows: 0,
  window: { ms: 60_000, admitted: 0, returned: 0 },
  taken: 0,
  perUserLimit: 1,
  nextNoShowAt: 0,
  holdMs: 30_000,
  ...over,
});

describe("the wait", () => {
  it("comes from the pace measured while units are free, not from a ceiling", () => {
    const measured = line({ window: { ms: 60_000, admitted: 120, returned: 0 } }); // 2 a second
    expect(lineEstimate(measured, 9, NOW).estimatedWaitSec).toBe(5); // 10 places to go
    expect(lineEstimate(line(), 9, NOW).estimatedWaitSec).toBeNull(); // nothing measured
  });

  it("is unknown before the start and while admission is held", () => {
    const measured = { window: { ms: 60_000, admitted: 120, returned: 0 } };
    expect(lineEstimate(line({ ...measured, startsAt: NOW + 10_000 }), 0, NOW).estimatedWaitSec).toBeNull();
    expect(lineEstimate(line({ ...measured, state: "paused" }), 0, NOW).estimatedWaitSec).toBeNull();
  });

  it("waits for rounds of no-shows a grace apart once every unit left is held", () => {
    // 10 units, each held by a pass in its grace; 40% of passes went unused so far.
    const held = line({ remaining: 10, fresh: 10, used: 6, noShows: 4, nextNoShowAt: NOW + 12_000 });
    // Round one frees 4 (the oldest grace ends in 12 s), round two 1.6 more a hold later, then 0.64...
    expect(lineEstimate(held, 0, NOW).estimatedWaitSec).toBe(12);
    expect(lineEstimate(held, 3, NOW).estimatedWaitSec).toBe(12);
    expect(lineEstimate(held, 4, NOW).estimatedWaitSec).toBe(42);
    expect(lineEstimate(held, 5, NOW).estimatedWaitSec).toBe(72);
    // Beyond what the no-shows can ever free (10 x 0.4 / 0.6 = 6.7): no estimate, and likely gone.
    expect(lineEstimate(held, 7, NOW)).toMatchObject({ estimatedWaitSec: null, likelySoldOutBeforeYou: true });
    // Nobody resolved yet: nothing is known to come free.
    expect(lineEstimate(line({ remaining: 10, fresh: 10, nextNoShowAt: NOW + 12_000 }), 0, NOW).estimatedWaitSec).toBeNull();
  });

  it("counts units given back as they come back", () => {
    // Every unit held, nobody unused, but a unit back every 10 s: three a hold.
    const held = line({
      remaining: 10,
      fresh: 10,
      used: 10,
      nextNoShowAt: NOW + 5_000,
      window: { ms: 60_000, admitted: 0, returned: 6 },
    });
    expect(lineEstimate(held, 2, NOW).estimatedWaitSec).toBe(5);
    expect(lineEstimate(held, 3, NOW).estimatedWaitSec).toBe(35);
  });
});

describe("likely sold out before your turn", () => {
  it("counts the passes in their grace and the places ahead, less the no-shows, against the units left and returns", () => {
    expect(lineEstimate(line({ remaining: 10 }), 8, NOW).likelySoldOutBeforeYou).toBe(false);
    expect(lineEstimate(line({ remaining: 10 }), 10, NOW).likelySoldOutBeforeYou).toBe(true);
    expect(lineEstimate(line({ remaining: 10, fresh: 5 }), 6, NOW).likelySoldOutBeforeYou).toBe(true);
    // Half of those let in never buy: twice as many places ahead still leave a unit.
    const halfStayAway = line({ remaining: 10, fresh: 5, used: 10, noShows: 10 });
    expect(lineEstimate(halfStayAway, 14, NOW).likelySoldOutBeforeYou).toBe(false);
    expect(lineEstimate(halfStayAway, 16, NOW).likelySoldOutBeforeYou).toBe(true);
    // Buyers who take two units each go through the units twice as fast.
    const pairs = line({ remaining: 10, used: 3, taken: 6, perUserLimit: 2 });
    expect(lineEstimate(pairs, 5, NOW).likelySoldOutBeforeYou).toBe(true);
  });
});
