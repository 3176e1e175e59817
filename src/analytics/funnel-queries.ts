// Reading the funnel back: SQL over Workers Analytics Engine's SQL API with an account's API
// token, or the same SQL asked of the local stand-in (dev/analytics/stand-in.ts), which answers
// in the API's shape. Only the admin's funnel routes read it.
import type { FunnelSeries, SalesFunnel } from "../shared/api-types";
import { FUNNEL_STEPS, type FunnelStep, saleFunnelSql, salesFunnelSql } from "../shared/funnel";
import type { Settings } from "../shared/settings";
import { Unavailable } from "../shared/unavailable";

/** How long one SQL query may take before the route answers 503. */
const QUERY_TIMEOUT_MS = 10_000;

/** Runs one query and answers its rows. */
export type FunnelSql = (sql: string) => Promise<Record<string, unknown>[]>;

/**
 * Where the funnel's SQL goes: the local stand-in when ANALYTICS_STAND_IN_URL is set, else the
 * account's SQL API; undefined when neither is configured.
 */
export function funnelSqlOf(settings: Settings): FunnelSql | undefined {
  const standIn = settings.ANALYTICS_STAND_IN_URL;
  const account = settings.ANALYTICS_ACCOUNT_ID;
  const token = settings.ANALYTICS_API_TOKEN;
  if (standIn !== undefined) return sqlOver(new URL("sql", `${standIn}/`).href, undefined);
  if (account === undefined || token === undefined) return undefined;
  return sqlOver(`https://api.cloudflare.com/client/v4/accounts/${encodeURIComponent(account)}/analytics_engine/sql`, token);
}

/** The SQL API: the query as the POST body, the rows as `data` of a JSON answer. */
const sqlOver =
  (url: string, token: string | undefined): FunnelSql =>
  async (sql) => {
    const res = await fetch(url, {
      method: "POST",
      headers: token === undefined ? {} : { Authorization: `Bearer ${token}` },
      body: sql,
      signal: AbortSignal.timeout(QUERY_TIMEOUT_MS),
    });
    if (!res.ok) {
      await res.body?.cancel();
      throw new Unavailable(`the funnel's analytics answered ${res.status}; try again shortly`);
    }
    const answer = (await res.json()) as { data?: unknown };
    if (!Array.isArray(answer.data)) throw new Unavailable("the funnel's analytics answered without rows");
    return answer.data as Record<string, unknown>[];
  };

const isStep = (value: unknown): value is FunnelStep => FUNNEL_STEPS.includes(value as FunnelStep);

/** An empty count for every step. */
const noCounts = (): Record<FunnelStep, number> =>
  Object.fromEntries(FUNNEL_STEPS.map((step) => [step, 0])) as Record<FunnelStep, number>;

/** One sale's funnel per second over the `windowSec` seconds up to `nowMs`, and its totals. */
export async function saleFunnel(sql: FunnelSql, saleId: string, nowMs: number, windowSec: number): Promise<FunnelSeries> {
  const to = Math.floor(nowMs / 1000);
  const from = to - windowSec + 1;
  const bySecond = new Map<number, Record<FunnelStep, number>>();
  const totals = noCounts();
  for (const row of await sql(saleFunnelSql(saleId, from))) {
    const at = Number(row.at);
    const count = Math.round(Number(row.count));
    if (!isStep(row.step) || !Number.isSafeInteger(at) || !Number.isSafeInteger(count)) continue;
    const counts = bySecond.get(at) ?? noCounts();
    counts[row.step] += count;
    bySecond.set(at, counts);
    totals[row.step] += count;
  }
  const points = [...bySecond].sort(([a], [b]) => a - b).map(([at, counts]) => ({ at, counts }));
  return { saleId, from, to, steps: [...FUNNEL_STEPS], points, totals };
}

/** Every sale's funnel over the `windowSec` seconds up to `nowMs`, step by step. */
export async function salesFunnel(sql: FunnelSql, nowMs: number, windowSec: number): Promise<SalesFunnel> {
  const to = Math.floor(nowMs / 1000);
  const from = to - windowSec + 1;
  const bySale = new Map<string, Record<FunnelStep, number>>();
  for (const row of await sql(salesFunnelSql(from))) {
    const count = Math.round(Number(row.count));
    if (!isStep(row.step) || typeof row.sale !== "string" || !Number.isSafeInteger(count)) continue;
    const counts = bySale.get(row.sale) ?? noCounts();
    counts[row.step] += count;
    bySale.set(row.sale, counts);
  }
  const sales = [...bySale].map(([saleId, counts]) => ({ saleId, counts }));
  return { from, to, steps: [...FUNNEL_STEPS], sales };
}
