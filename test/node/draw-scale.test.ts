import { beforeAll, expect, it } from "vitest";
import { type DrawFigures, measureDraw } from "../../load/runner/draw-scale.ts";
import { DRAW_CHUNK_LEAVES, DRAW_PAGE } from "../../src/shared/limits.ts";

// The draw bench's section (npm run bench -- draw) in small: a draw of 3,000 entries,
// three chunks of the tree and three pages of each paged phase, on the real local stack
// through the jobs queue. What it asserts does not depend on the machine's speed: the
// result verifies, an entry's round trips, the steps the page sizes imply, and D1 rows per
// entry that stay the same at any size (a query over the whole list would read thousands).

const ENTRIES = 3_000;
let figures: DrawFigures;

beforeAll(async () => {
  figures = await measureDraw({ entries: ENTRIES });
}, 240_000);

const steps = (phase: string) => figures.phases.find((p) => p.phase === phase)?.steps;

it("draws every entry and the draw verifies from its public routes", () => {
  expect(figures.verify.problems).toEqual([]);
  expect(figures.verify.ok).toBe(true);
  expect(figures.verify.entries).toBe(ENTRIES);
  expect(figures.verify.winners).toBeGreaterThan(0);
});

it("one entry is one Upstash round trip, and one more for the global limits when they are on", () => {
  expect(figures.entry.limitsOff).toMatchObject({ status: 201, roundTrips: 1, gatewayCommands: 1 });
  expect(figures.entry.limitsOn).toMatchObject({ status: 201, roundTrips: 2 });
});

it("takes the steps the page sizes imply", () => {
  // Each bucket holds fewer entries than a page: one HSCAN each, then one step to move on.
  expect(ENTRIES / figures.buckets).toBeLessThan(DRAW_PAGE);
  expect(steps("collect")).toBe(figures.buckets + 1);
  // Full chunks, then the last one with the root; a page each, then one that finds no more.
  expect(steps("tree")).toBe(Math.floor(ENTRIES / DRAW_CHUNK_LEAVES) + 1);
  expect(steps("shuffle")).toBe(Math.ceil(ENTRIES / DRAW_PAGE) + 1);
  expect(steps("select")).toBe(Math.ceil(ENTRIES / DRAW_PAGE) + 1);
  expect(steps("beacon")).toBeGreaterThanOrEqual(1);
  expect(figures.jobs).toBeGreaterThan(1);
});

it("reads and writes D1 rows in proportion to the entries, never the whole list per page", () => {
  expect(figures.d1.rowsRead).toBeLessThan(20 * ENTRIES);
  expect(figures.d1.rowsWritten).toBeLessThan(10 * ENTRIES);
  // The list's pages read each leaf once; the public view reads its few rows of counts, not
  // the list (counting it read every entry once more).
  expect(figures.verify.d1RowsRead).toBeLessThan(2 * ENTRIES);
});
