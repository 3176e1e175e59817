import { describe, expect, it } from "vitest";
import { bucketKeys, saleKeys } from "../../src/shared/keys";
import { BASE, checkout, createSale, handleWithVars, redis, userToken } from "./helpers";

type ErrorJson = { error: { code: string; message: string } };

/** A GET through the Worker with the production per-IP limit (the suite runs without one). */
const getWithIpLimit = (path: string, headers: Record<string, string> = {}) =>
  handleWithVars({ IP_RATE_LIMIT: "20" }, new Request(`${BASE}${path}`, { headers }));

describe("admission and abuse limits", () => {
  it("throttles a sale at its token-bucket rate with 429, Retry-After and RateLimit headers", async () => {
    const sale = await createSale({ stock: 10, admission: { rate: 1, burst: 1 } });
    expect((await checkout(sale.id, await userToken("bucket-1"))).status).toBe(202);
    const res = await checkout(sale.id, await userToken("bucket-2"));
    expect(res.status).toBe(429);
    expect(((await res.json()) as ErrorJson).error.code).toBe("RATE_LIMITED");
    expect(Number(res.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
    expect(res.headers.get("RateLimit-Limit")).toBe("1");
    expect(res.headers.get("RateLimit-Remaining")).toBe("0");
    expect(await redis.hget(saleKeys(sale.id).meta, "remaining")).toBe("9");
    expect(await redis.hget(bucketKeys(sale.id, 0, 1).buyers, "bucket-2")).toBeNull();
  });

  it("limits one user hammering the API (USER_RATE_LIMIT, burst 2x)", async () => {
    const sale = await createSale({ stock: 5 });
    const token = await userToken("hammer");
    const statuses: number[] = [];
    for (let i = 0; i < 15; i++) statuses.push((await checkout(sale.id, token)).status);
    expect(statuses[0]).toBe(202);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(statuses.every((s) => [202, 409, 429].includes(s))).toBe(true);
  });

  it("limits one address (IP_RATE_LIMIT, burst 2x) with the same 429 shape", async () => {
    const results = await Promise.all(
      Array.from({ length: 120 }, () =>
        getWithIpLimit("/api/sales/123456", { "CF-Connecting-IP": "203.0.113.7" }).then(async (r) => ({
          status: r.status,
          body: (await r.json()) as ErrorJson,
          retryAfter: r.headers.get("Retry-After"),
        })),
      ),
    );
    const limited = results.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    expect(limited[0]?.body.error.code).toBe("RATE_LIMITED");
    expect(limited[0]?.retryAfter).toBeTruthy();
    // Another address is unaffected.
    const other = await getWithIpLimit("/api/sales/123456", { "CF-Connecting-IP": "198.51.100.9" });
    expect(other.status).toBe(404);
  });

  it("counts an IPv6 caller by its /64: a host moving inside it is limited as one address", async () => {
    const group = `2001:db8:${crypto.randomUUID().slice(0, 4)}:1`;
    const statuses = await Promise.all(
      Array.from({ length: 120 }, (_, i) =>
        getWithIpLimit("/api/sales/123458", { "CF-Connecting-IP": `${group}:${i.toString(16)}::1` }).then((r) => r.status),
      ),
    );
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    // The next /64 is another address.
    expect((await getWithIpLimit("/api/sales/123458", { "CF-Connecting-IP": `${group.slice(0, -1)}2::1` })).status).toBe(404);
  });

  it("limits requests without CF-Connecting-IP as one shared address instead of not at all", async () => {
    const statuses = await Promise.all(
      Array.from({ length: 120 }, () => getWithIpLimit("/api/sales/123457").then((r) => r.status)),
    );
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 404 || s === 429)).toBe(true);
  });
});
