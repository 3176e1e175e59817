import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { SaleStats } from "../../src/shared/api-types";
import { saleStatsKey } from "../../src/shared/keys";
import { BASE, bearer, checkout, createSale, redis, report, userToken, waitForConfirmed } from "./helpers";

const stats = (saleId: string, headers: Record<string, string> = bearer(env.ADMIN_TOKEN)) =>
  SELF.fetch(`${BASE}/admin/sales/${saleId}/stats`, { headers });

/** Counts outcomes the way their writers do: HINCRBY on the minute's hash, field "<second>:<code>". */
async function count(saleId: string, second: number, code: string, n: number): Promise<void> {
  await redis.hincrby(saleStatsKey(saleId, Math.floor(second / 60)), `${second}:${code}`, n);
}

describe("admin: sale stats for the console", () => {
  it("returns each second's outcomes over the last five minutes, whatever the codes, with the sale and its report", async () => {
    const sale = await createSale({ stock: 5 });
    const boughtAt = Math.floor(Date.now() / 1000);
    const accepted = await checkout(sale.id, await userToken("stats-buyer"));
    const { orderId } = (await accepted.json()) as { orderId: string };
    await waitForConfirmed([orderId]);
    // The checkout counted itself (lua/checkout.lua): one OK in its second (Redis' clock), in
    // the hash of the minute it was sent in; cleared so the series below is the test's own.
    const minutes = [...new Set([Math.floor(boughtAt / 60), Math.floor(Date.now() / 60_000)])].map((m) =>
      saleStatsKey(sale.id, m),
    );
    const fields = (await Promise.all(minutes.map((key) => redis.hgetall(key)))).flatMap((f) => (f ?? []) as unknown as string[]);
    expect(fields.filter((f) => /^\d+:OK$/.test(String(f)))).toHaveLength(1);
    for (const key of minutes) await redis.del(key);

    const now = Math.floor(Date.now() / 1000);
    await count(sale.id, now - 2, "OK", 3);
    await count(sale.id, now - 2, "SOLD_OUT", 7);
    await count(sale.id, now - 2, "OK", 1); // counted twice: the counts add up
    await count(sale.id, now - 61, "RATE_LIMITED", 4); // the minute before
    await count(sale.id, now - 120, "A_CODE_ADDED_LATER", 2);
    await count(sale.id, now - 400, "OK", 9); // older than the window
    await redis.hset(saleStatsKey(sale.id, Math.floor(now / 60)), { "not-a-second": "5" }); // not ours to chart

    const res = await stats(sale.id);
    expect(res.status).toBe(200);
    const body = (await res.json()) as SaleStats;
    expect(body.series.to - body.series.from).toBe(299);
    expect(body.series.to).toBeGreaterThanOrEqual(now);
    expect(body.series.points).toEqual([
      { at: now - 120, counts: { A_CODE_ADDED_LATER: 2 } },
      { at: now - 61, counts: { RATE_LIMITED: 4 } },
      { at: now - 2, counts: { OK: 4, SOLD_OUT: 7 } },
    ]);
    expect(body.sale).toMatchObject({ id: sale.id, stock: 5, remaining: 4, status: "live", admission: sale.admission });
    expect(body.report).toEqual(await report(sale.id));
    expect(body.report.d1.confirmed).toBe(1);
  });

  it("has an empty series for a sale nobody tried to buy", async () => {
    const sale = await createSale();
    const body = (await (await stats(sale.id)).json()) as SaleStats;
    expect(body.series.points).toEqual([]);
    expect(body.report.reconciled).toBe(true);
  });

  it("needs the admin token, a well-formed id and a known sale", async () => {
    const sale = await createSale();
    for (const headers of [{}, bearer("wrong"), bearer(await userToken("not-an-admin"))]) {
      const res = await stats(sale.id, headers);
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("UNAUTHORIZED");
    }
    const malformed = await stats("12x");
    expect(malformed.status).toBe(400);
    const unknown = await stats("987654321987");
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: { code: "SALE_NOT_FOUND", message: expect.any(String) } });
  });

  it("is never answered across origins", async () => {
    const sale = await createSale();
    const res = await stats(sale.id, { ...bearer(env.ADMIN_TOKEN), Origin: "https://shop.example" });
    expect(res.status).toBe(403);
    expect(res.headers.get("Access-Control-Allow-Origin")).toBeNull();
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("CROSS_ORIGIN");
    const sameOrigin = await stats(sale.id, { ...bearer(env.ADMIN_TOKEN), Origin: BASE });
    expect(sameOrigin.status).toBe(200);
  });
});
