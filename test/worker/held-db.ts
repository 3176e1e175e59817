import { type CountingDb, countingDb } from "../../src/lab/counting-db";

/** A counting D1 whose queries can be held until the test lets them through. */
export interface HeldDb extends CountingDb {
  /** Holds every query from now until open() (queries already running are not held). */
  hold(): void;
  open(): void;
}

export function heldDb(real: D1Database): HeldDb {
  let gate: Promise<void> | undefined;
  let release: (() => void) | undefined;
  const counting = countingDb(real, async () => {
    await gate;
  });
  return {
    db: counting.db,
    get queries() {
      return counting.queries;
    },
    hold() {
      gate = new Promise((resolve) => {
        release = resolve;
      });
    },
    open() {
      release?.();
      gate = undefined;
    },
  };
}
