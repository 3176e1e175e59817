// D1 as the Worker's code sees it, with every query counted: how the read-path experiment
// (and the cache tests) show what reaches the database. The statements run unchanged
// against the real database; `beforeQuery` may hold each one (a test holding D1 to prove no
// reader waits on it). The rows they read are D1's own count (meta.rows_read, what D1 bills):
// first() drops the meta, so it runs as all() and answers the first row, the same query to D1
// (first() adds no LIMIT); raw() shows none and counts no rows.

export interface CountingDb {
  db: D1Database;
  /** Queries run so far (a batch counts once). */
  readonly queries: number;
  /** Rows D1 read for them. */
  readonly rowsRead: number;
}

export function countingDb(real: D1Database, beforeQuery: () => Promise<void> = async () => {}): CountingDb {
  let queries = 0;
  let rowsRead = 0;
  const counted = async <T>(run: () => Promise<T>): Promise<T> => {
    queries++;
    await beforeQuery();
    return run();
  };
  const read = <T extends D1Result>(result: T): T => {
    rowsRead += result.meta.rows_read;
    return result;
  };
  const first = async (statement: D1PreparedStatement, column?: string) => {
    const row = read(await statement.all<Record<string, unknown>>()).results[0];
    return row === undefined ? null : column === undefined ? row : row[column];
  };
  // batch() wants the database's own statements back.
  const unwrapped = new WeakMap<D1PreparedStatement, D1PreparedStatement>();
  const wrap = (statement: D1PreparedStatement): D1PreparedStatement => {
    const proxy = new Proxy(statement, {
      get(target, prop) {
        if (prop === "bind") return (...values: unknown[]) => wrap(target.bind(...values));
        if (prop === "first") return (column?: string) => counted(() => first(target, column));
        if (prop === "all") return async () => read(await counted(() => target.all()));
        if (prop === "run") return async () => read(await counted(() => target.run()));
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
        return async (statements: D1PreparedStatement[]) =>
          (await counted(() => target.batch(statements.map((s) => unwrapped.get(s) ?? s)))).map(read);
      }
      return Reflect.get(target, prop, target);
    },
  });
  return {
    db,
    get queries() {
      return queries;
    },
    get rowsRead() {
      return rowsRead;
    },
  };
}
