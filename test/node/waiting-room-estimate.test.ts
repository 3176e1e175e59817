// A random sale's far-back buyers are told where they stand from their draw key alone; the
// estimate must hold within its stated spread, and near the front only the exact place will do.
import { expect, it } from "vitest";
import { drawKey, drawOrder, estimatedPlace } from "../../src/shared/waiting-room-draw.ts";

const SEED = "a1".repeat(32);
const progressOf = (drawn: number, admitted: number, admitPerSec: number) => ({ drawn, admitted, admitPerSec });

it("estimates each far-back buyer's place within four binomial spreads of the draw's, and never near the front", async () => {
  const users = Array.from({ length: 3_000 }, (_, i) => `estimate-${i}`);
  const order = await drawOrder(SEED, users);
  const progress = progressOf(users.length, 0, 10);
  let estimated = 0;
  for (const [i, userId] of order.entries()) {
    const estimate = estimatedPlace(await drawKey(SEED, userId), progress);
    if (estimate === undefined) continue;
    estimated++;
    const fraction = (estimate - 1) / users.length;
    const spread = Math.sqrt(users.length * fraction * (1 - fraction));
    expect(Math.abs(estimate - (i + 1))).toBeLessThanOrEqual(4 * spread + 1);
    // Estimated only well behind the front: 10 s of admission (100 places) and its spread.
    expect(i + 1).toBeGreaterThan(100);
  }
  expect(estimated).toBeGreaterThan(2_500);
});

it("gives no estimate to anyone the line may reach within ten seconds", () => {
  const lowKey = `0000000001${"f".repeat(54)}`;
  expect(estimatedPlace(lowKey, progressOf(1_000_000, 0, 100))).toBeUndefined();
  const middle = `8${"0".repeat(63)}`;
  expect(estimatedPlace(middle, progressOf(1_000_000, 0, 100))).toBe(500_001);
  expect(estimatedPlace(middle, progressOf(1_000_000, 499_000, 100))).toBeUndefined();
});
