// D1 as the Worker's code sees it, with every query counted: how the read-path experiment
// (and the cache tests) show what reaches the database. The statements run unchanged
// against the real database; `beforeQuery` may hold each one (a test holding D1 to prove no
// reader waits on it).

export interface CountingDb {
  db: D1Database;
  /** Queries run so far (a batch counts once). */
  readonly queries: number;
}

export function countingDb(real: D1Database, beforeQuery: () => Promise<void> = async () => {}): CountingDb {
  let queries = 0;
  const counted = async <T>(run: () => Promise<T>): Promise<T> => {
    queries++;
    await beforeQuery();
    return run();
  };
  // batch() wants the database's own statements back.
  const unwrapped = new WeakMap<D1PreparedStatement, D1PreparedStatement>();
  const wrap = (statement: D1PreparedStatement): D1PreparedStatement => {
    const proxy = new Proxy(statement, {
      get(target, prop) {
        if (prop === "bind") return (...values: unknown[]) => wrap(target.bind(...values));
        if (prop === "first") return (column?: string) => counted(() => (column ? target.first(column) : target.first()));
        if (prop === "all") return () => counted(() => target.all());
        if (prop === "run") return () => counted(() => target.run());
        if (prop === "raw") return () => counted(() => target.raw());
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
        return (statements: D1PreparedStatement[]) => counted(() => target.batch(statements.map((s) => unwrapped.get(s) ?? s)));
      }
      return Reflect.get(target, prop, target);
    },
  });
  return {
    db,
    get queries() {
      return queries;
    },
  };
}
