// D1 as the Worker's code sees it, with every query counted, and optionally held until the
// test lets it through: how the cache tests prove what reaches the database and that no
// reader waits on it. The statements still run against the real local D1.

export interface CountingDb {
  db: D1Database;
  /** Queries run so far (a batch counts once). */
  readonly queries: number;
  /** Holds every query until open() is called (queries already running are not held). */
  hold(): void;
  open(): void;
}

export function countingDb(real: D1Database): CountingDb {
  let queries = 0;
  let gate: Promise<void> | undefined;
  let release: (() => void) | undefined;
  const counted =
    <T>(run: () => Promise<T>) =>
    async (): Promise<T> => {
      queries++;
      await gate;
      return run();
    };
  const unwrapped = new WeakMap<D1PreparedStatement, D1PreparedStatement>();
  const wrap = (statement: D1PreparedStatement): D1PreparedStatement => {
    const proxy = new Proxy(statement, {
      get(target, prop) {
        if (prop === "bind") return (...values: unknown[]) => wrap(target.bind(...values));
        if (prop === "first") return (column?: string) => counted(() => (column ? target.first(column) : target.first()))();
        if (prop === "all" || prop === "run") return () => counted(() => target[prop]())();
        if (prop === "raw") return () => counted(() => target.raw())();
        return Reflect.get(target, prop, target);
      },
    });
    unwrapped.set(proxy, statement);
    return proxy;
  };
  const db = new Proxy(real, {
    get(target, prop) {
      if (prop === "prepare") return (sql: string) => wrap(target.prepare(sql));
      if (prop === "batch") {
        return (statements: D1PreparedStatement[]) => counted(() => target.batch(statements.map((s) => unwrapped.get(s) ?? s)))();
      }
      return Reflect.get(target, prop, target);
    },
  });
  return {
    db,
    get queries() {
      return queries;
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
