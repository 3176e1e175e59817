// A local stand-in for Workers Analytics Engine, for the local stack (`npm start`) and the
// Worker tests: the local runtime's binding accepts data points and keeps none. The Worker
// posts each data point here as well (ANALYTICS_STAND_IN_URL), and asks the funnel's SQL of it
// as it would ask the SQL API; the answer has the API's shape ({ meta, data, rows }).
//
// What is real: the SQL. Each query runs as written on SQLite (sql.js, SQLite compiled to
// WebAssembly: no native build), over a table of the dataset's name with Analytics Engine's
// columns (timestamp, index1, blob1.., double1.., _sample_interval). What is stood in for:
// Analytics Engine's own functions the queries use (toUnixTimestamp, toDateTime), defined
// here on timestamps kept as epoch seconds, and sampling (every point stands for itself:
// _sample_interval 1). With `file`, the points are appended to it, one JSON line each, and
// read back at start, so npm start's funnel survives its restarts.
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import initSqlJs, { type Database } from "sql.js";
import { FUNNEL_DATASET } from "../../src/shared/funnel.ts";

export interface AnalyticsStandIn {
  /** Where the Worker's ANALYTICS_STAND_IN_URL points. */
  url: string;
  /** Every data point kept, oldest first, as written (with the second it arrived). */
  points(): StoredPoint[];
  stop(): Promise<void>;
}

/** A data point as the Worker's binding takes it, with the dataset it was written to. */
interface WrittenPoint {
  dataset: string;
  indexes?: (string | null)[];
  blobs?: (string | null)[];
  doubles?: number[];
}

export type StoredPoint = WrittenPoint & { timestamp: number };

/** Analytics Engine's limits per point: 20 blobs, 20 doubles, one index. */
const BLOBS = 20;
const DOUBLES = 20;
/** The most bytes one request may carry: a data point is small. */
const MAX_BODY_BYTES = 64 * 1024;

function createTable(db: Database): void {
  const blobs = Array.from({ length: BLOBS }, (_, i) => `blob${i + 1} TEXT`);
  const doubles = Array.from({ length: DOUBLES }, (_, i) => `double${i + 1} REAL NOT NULL DEFAULT 0`);
  db.run(
    `CREATE TABLE ${FUNNEL_DATASET} (timestamp INTEGER NOT NULL, index1 TEXT, ${[...blobs, ...doubles].join(", ")},
       _sample_interval INTEGER NOT NULL DEFAULT 1)`,
  );
  // The stand-in's timestamps are epoch seconds already.
  db.create_function("toUnixTimestamp", (at: number) => at);
  db.create_function("toDateTime", (at: number) => at);
}

function insert(db: Database, point: StoredPoint): void {
  const blobs = (point.blobs ?? []).slice(0, BLOBS);
  const doubles = (point.doubles ?? []).slice(0, DOUBLES);
  const columns = ["timestamp", "index1", ...blobs.map((_, i) => `blob${i + 1}`), ...doubles.map((_, i) => `double${i + 1}`)];
  db.run(`INSERT INTO ${FUNNEL_DATASET} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`, [
    point.timestamp,
    point.indexes?.[0] ?? null,
    ...blobs,
    ...doubles,
  ]);
}

/** Rows of a query's first statement, as the SQL API's `data`. */
function select(db: Database, sql: string): Record<string, unknown>[] {
  const statement = db.prepare(sql);
  try {
    const rows: Record<string, unknown>[] = [];
    while (statement.step()) rows.push(statement.getAsObject());
    return rows;
  } finally {
    statement.free();
  }
}

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error("request body too large");
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

const isPoint = (value: unknown): value is WrittenPoint =>
  typeof value === "object" && value !== null && (value as WrittenPoint).dataset === FUNNEL_DATASET;

/** Starts the stand-in on 127.0.0.1 (`port` 0: any free one), keeping its points in `file` when given. */
export async function startAnalyticsStandIn(opts: { port?: number; file?: string } = {}): Promise<AnalyticsStandIn> {
  const SQL = await initSqlJs();
  const db = new SQL.Database();
  createTable(db);
  const kept: StoredPoint[] = [];
  if (opts.file && existsSync(opts.file)) {
    for (const line of readFileSync(opts.file, "utf8").split("\n")) {
      if (line.trim() === "") continue;
      const point = JSON.parse(line) as StoredPoint;
      kept.push(point);
      insert(db, point);
    }
  }

  const answer = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  };
  const server = createServer(async (req, res) => {
    try {
      const text = await bodyOf(req);
      if (req.method === "POST" && req.url === "/write") {
        const written: unknown = JSON.parse(text);
        if (!isPoint(written)) return answer(res, 400, { error: `a data point of ${FUNNEL_DATASET} is expected` });
        const point: StoredPoint = { ...written, timestamp: Math.floor(Date.now() / 1000) };
        kept.push(point);
        insert(db, point);
        if (opts.file) appendFileSync(opts.file, `${JSON.stringify(point)}\n`);
        return answer(res, 200, { ok: true });
      }
      if (req.method === "POST" && req.url === "/sql") {
        const data = select(db, text);
        const meta = Object.keys(data[0] ?? {}).map((name) => ({ name }));
        return answer(res, 200, { meta, data, rows: data.length, rows_before_limit_at_least: data.length });
      }
      return answer(res, 404, { error: "POST /write or /sql" });
    } catch (err) {
      return answer(res, 400, { error: err instanceof Error ? err.message : String(err) });
    }
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    points: () => [...kept],
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          db.close();
          resolve();
        });
      }),
  };
}
