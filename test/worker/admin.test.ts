import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { saleKeys } from "../../src/shared/keys";
import { BASE, bearer, createSale, redis } from "./helpers";

const post = (body: unknown, headers: Record<string, string> = bearer(env.ADMIN_TOKEN)) =>
  SELF.fetch(`${BASE}/admin/sales`, {
    method: "POST",
    headers: { ...headers, "Content-Type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });

const valid = () => ({
  name: "Sneaker drop",
  stock: 100,
  startsAt: new Date(Date.now() + 60_000).toISOString(),
  endsAt: new Date(Date.now() + 3_600_000).toISOString(),
});

const saleCount = async () => (await env.DB.prepare("SELECT COUNT(*) AS n FROM sales").first<number>("n")) ?? 0;

describe("admin: create sale", () => {
  it("creates the sale in D1 and Redis and shows it publicly", async () => {
    const res = await post(valid());
    expect(res.status).toBe(201);
    const sale = (await res.json()) as { id: string; stock: number; remaining: number; status: string };
    expect(sale).toMatchObject({ stock: 100, remaining: 100, status: "upcoming" });
    expect(await redis.hget(saleKeys(sale.id).meta, "remaining")).toBe("100");

    const pub = await SELF.fetch(`${BASE}/api/sales/${sale.id}`);
    expect(pub.status).toBe(200);
    expect(await pub.json()).toMatchObject({ id: sale.id, name: "Sneaker drop", stock: 100, remaining: 100, status: "upcoming" });
  });

  it("is safe to retry with an Idempotency-Key: one sale, stock never reset", async () => {
    const key = `drop-${crypto.randomUUID()}`;
    const body = valid(); // a retry sends the same request again
    const first = await post(body, { ...bearer(env.ADMIN_TOKEN), "Idempotency-Key": key });
    expect(first.status).toBe(201);
    const sale = (await first.json()) as { id: string };
    await redis.hincrby(saleKeys(sale.id).meta, "remaining", -7); // sales happened meanwhile
    const before = await saleCount();

    const retry = await post(body, { ...bearer(env.ADMIN_TOKEN), "Idempotency-Key": key });
    expect(retry.status).toBe(200);
    expect(((await retry.json()) as { id: string }).id).toBe(sale.id);
    expect(await saleCount()).toBe(before);
    expect(await redis.hget(saleKeys(sale.id).meta, "remaining")).toBe("93");
  });

  it("refuses an Idempotency-Key reused with a different body (422), creating and changing nothing", async () => {
    const key = `drop-${crypto.randomUUID()}`;
    const headers = { ...bearer(env.ADMIN_TOKEN), "Idempotency-Key": key };
    const body = valid();
    const first = await post(body, headers);
    expect(first.status).toBe(201);
    const sale = (await first.json()) as { id: string };
    const before = await saleCount();

    for (const changed of [
      { ...body, stock: 101 },
      { ...body, name: "Another drop" },
      { ...body, admission: { rate: 5, burst: 5 } },
    ]) {
      const res = await post(changed, headers);
      expect(res.status, JSON.stringify(changed)).toBe(422);
      expect(await res.json()).toEqual({ error: { code: "IDEMPOTENCY_KEY_REUSED", message: expect.any(String) } });
    }
    expect(await saleCount()).toBe(before);
    expect(await redis.hget(saleKeys(sale.id).meta, "stock")).toBe("100");

    // The same request spelled differently (key order, spacing) is the same request.
    const { stock, name, ...rest } = body;
    const respelled = await post(JSON.stringify({ ...rest, stock, name: `  ${name}` }, null, 2), headers);
    expect(respelled.status).toBe(200);
    expect(((await respelled.json()) as { id: string }).id).toBe(sale.id);
  });

  it("refuses without the admin token, changing nothing", async () => {
    const before = await saleCount();
    for (const headers of [{}, bearer("wrong"), { Authorization: "Basic abc" }]) {
      const res = await post(valid(), headers);
      expect(res.status).toBe(401);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("UNAUTHORIZED");
    }
    expect(await saleCount()).toBe(before);
  });

  it("refuses bad input with 400 BAD_REQUEST, changing nothing", async () => {
    const before = await saleCount();
    // One clock reading for the cases that compare startsAt with endsAt: two valid() calls a
    // millisecond apart made "endsAt equal to startsAt" a one-millisecond window, which is valid.
    const base = valid();
    const cases: unknown[] = [
      "{not json",
      [],
      { ...valid(), stock: 0 },
      { ...valid(), stock: 2.5 },
      { ...valid(), name: "" },
      { ...valid(), startsAt: "yesterday" },
      { ...base, endsAt: base.startsAt },
      { ...valid(), userId: "extra" },
      { ...valid(), admission: { rate: 10, burst: 10, extra: 1 } },
      { ...valid(), startsAt: "0000-01-01T00:00:00Z" },
      { ...valid(), endsAt: "9999-12-31T23:59:59Z" },
      { ...valid(), startsAt: new Date(Date.now() - 2 * 86_400_000).toISOString() },
      {
        ...valid(),
        startsAt: new Date(Date.now() + 400 * 86_400_000).toISOString(),
        endsAt: new Date(Date.now() + 401 * 86_400_000).toISOString(),
      },
      { ...valid(), endsAt: new Date(Date.now() + 31 * 86_400_000).toISOString() },
    ];
    for (const body of cases) {
      const res = await post(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      const json = (await res.json()) as { error: { code: string; message: string } };
      expect(json.error.code).toBe("BAD_REQUEST");
      expect(json.error.message).not.toMatch(/at \w+ \(/); // no stack traces
    }
    expect(await saleCount()).toBe(before);
  });

  it("gives sales with overlapping windows distinct order-id slots", async () => {
    const a = await createSale();
    const b = await createSale();
    const slots = await env.DB.prepare("SELECT id_slot FROM sales WHERE id IN (?, ?)").bind(Number(a.id), Number(b.id)).all<{
      id_slot: number;
    }>();
    expect(new Set(slots.results.map((r) => r.id_slot)).size).toBe(2);
  });
});

describe("public sale page", () => {
  it("404s an unknown sale and 400s a malformed id", async () => {
    const unknown = await SELF.fetch(`${BASE}/api/sales/987654321`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: { code: "SALE_NOT_FOUND", message: expect.any(String) } });
    expect((await SELF.fetch(`${BASE}/api/sales/1;DROP`)).status).toBe(400);
  });

  it("answers unknown routes with the JSON error shape", async () => {
    const res = await SELF.fetch(`${BASE}/nope`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: { code: "NOT_FOUND", message: expect.any(String) } });
  });
});
