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
    get rowsRead() {
      return counting.rowsRead;
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

/**
 * D1 whose every other write batch fails (a fault a real D1 cannot be made to show on cue, so
 * it is injected): a run whose steps write in batches must resume from where D1 says it stands.
 */
export function everyOtherBatchFails(real: D1Database): D1Database {
  let batches = 0;
  return new Proxy(real, {
    get(target, prop) {
      if (prop === "batch")
        return (statements: D1PreparedStatement[]) => {
          batches++;
          if (batches % 2 === 1) return Promise.reject(new Error("the D1 batch was cut short"));
          return target.batch(statements);
        };
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  }) as D1Database;
}
