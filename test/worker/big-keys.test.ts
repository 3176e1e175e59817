// Big keys found before they bite: the admin report names a sale's largest Redis key and its
// share of REDIS_MAX_RECORD_BYTES, and past half of it warns, in the report and in the logs.
import { env } from "cloudflare:test";
import { afterEach, expect, it, vi } from "vitest";
import type { ReconciliationReport } from "../../src/shared/api-types";
import { bucketKeys } from "../../src/shared/keys";
import { bearer, createSale, fetchWithVars, redis } from "./helpers";

afterEach(() => vi.restoreAllMocks());

const report = async (saleId: string, vars: Partial<Env> = {}) => {
  const res = await fetchWithVars(vars, `/admin/sales/${saleId}/report`, { headers: bearer(env.ADMIN_TOKEN) });
  expect(res.status).toBe(200);
  return (await res.json()) as ReconciliationReport;
};

it("shows the sale's largest key and its share of the record limit, and warns past half of it, in the report and the logs", async () => {
  const sale = await createSale();
  const { buyers } = bucketKeys(sale.id, 0, 1);
  await redis.hset(buyers, Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`buyer-${i}`, `1:${7e18 + i}`])));
  const bytes = Number(await redis.exec(["MEMORY", "USAGE", buyers]));

  const roomy = await report(sale.id);
  expect(roomy.largestKey).toEqual({ key: buyers, bytes, share: bytes / Number(env.REDIS_MAX_RECORD_BYTES) });
  expect(roomy.warnings).toEqual([]);

  const warned: unknown[] = [];
  vi.spyOn(console, "warn").mockImplementation((line: unknown) => {
    warned.push(JSON.parse(String(line)));
  });
  const tight = await report(sale.id, { REDIS_MAX_RECORD_BYTES: String(Math.floor(bytes * 1.5)) });
  expect(tight.largestKey?.key).toBe(buyers);
  expect(tight.largestKey?.share).toBeGreaterThan(0.5);
  expect(tight.warnings).toEqual([expect.stringContaining(buyers)]);
  expect(warned).toContainEqual(
    expect.objectContaining({
      level: "warn",
      message: "sale key over half the Redis record limit",
      saleId: sale.id,
      key: buyers,
      bytes,
    }),
  );
});
