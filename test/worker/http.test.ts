import { env, SELF } from "cloudflare:test";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { htmlSecurityHeaders, securityHeaders } from "../../src/http/security-headers";
import { saleKeys } from "../../src/shared/keys";
import { BASE, bearer, checkout, createSale, handleWithVars, redis, userToken } from "./helpers";

// What every route shares: the media type of bodies, the methods of paths, the headers of answers.

const saleCount = async () => (await env.DB.prepare("SELECT COUNT(*) AS n FROM sales").first<number>("n")) ?? 0;
const validSale = () =>
  JSON.stringify({
    name: "media types",
    stock: 5,
    startsAt: new Date(Date.now() + 60_000).toISOString(),
    endsAt: new Date(Date.now() + 3_600_000).toISOString(),
  });

describe("request bodies are JSON", () => {
  it("refuses a sale whose body is not sent as JSON with 415, creating nothing", async () => {
    const before = await saleCount();
    const cases: [string, Record<string, string>, string | undefined][] = [
      ["text/plain", { "Content-Type": "text/plain" }, validSale()],
      ["form", { "Content-Type": "application/x-www-form-urlencoded" }, "name=x&stock=5"],
      ["no content type", {}, undefined],
      ["json-looking type", { "Content-Type": "text/json" }, validSale()],
    ];
    for (const [name, headers, body] of cases) {
      const res = await SELF.fetch(`${BASE}/admin/sales`, {
        method: "POST",
        headers: { ...bearer(env.ADMIN_TOKEN), ...headers },
        body,
      });
      expect(res.status, name).toBe(415);
      expect(await res.json(), name).toEqual({
        error: { code: "UNSUPPORTED_MEDIA_TYPE", message: expect.stringContaining("JSON") },
      });
    }
    expect(await saleCount()).toBe(before);
    const json = await SELF.fetch(`${BASE}/admin/sales`, {
      method: "POST",
      headers: { ...bearer(env.ADMIN_TOKEN), "Content-Type": "application/json; charset=utf-8" },
      body: validSale(),
    });
    expect(json.status).toBe(201);
  });

  it("refuses a checkout that sends a body other than JSON with 415, reserving nothing; no body is fine", async () => {
    const sale = await createSale({ stock: 3 });
    const token = await userToken("media-type-buyer");
    const plain = await checkout(sale.id, token, { body: "{}", headers: { "Content-Type": "text/plain" } });
    expect(plain.status).toBe(415);
    expect(await redis.hget(saleKeys(sale.id).meta, "remaining")).toBe("3");
    expect((await checkout(sale.id, token)).status).toBe(202);
  });
});

describe("methods", () => {
  it("answers a known path asked with another method with 405 and the methods it takes in Allow", async () => {
    const sale = await createSale();
    const cases: [string, string, string][] = [
      ["POST", `/api/sales/${sale.id}`, "GET, HEAD"],
      ["GET", `/api/sales/${sale.id}/checkout`, "POST"],
      ["DELETE", "/admin/sales", "POST"],
      ["PUT", "/healthz", "GET, HEAD"],
      ["PATCH", "/api/orders/123456789012345678", "GET, HEAD"],
    ];
    for (const [method, path, allow] of cases) {
      const res = await SELF.fetch(`${BASE}${path}`, { method, headers: bearer(env.ADMIN_TOKEN) });
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.get("Allow"), `${method} ${path}`).toBe(allow);
      expect(await res.json()).toEqual({ error: { code: "METHOD_NOT_ALLOWED", message: expect.stringContaining(method) } });
    }
    expect(await redis.hget(saleKeys(sale.id).meta, "remaining")).toBe("10");
  });

  it("keeps 404 for paths that do not exist, and for the lab while it is off", async () => {
    for (const [method, path] of [
      ["GET", "/nope"],
      ["POST", "/api/nope"],
      ["GET", "/lab/sales"],
      ["DELETE", "/lab/naive/sales/00000000-0000-0000-0000-000000000000/checkout"],
    ]) {
      const res = await SELF.fetch(`${BASE}${path}`, { method });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.headers.get("Allow")).toBeNull();
    }
  });
});

describe("response headers", () => {
  const fetchAs = (path: string, init: RequestInit = {}) => SELF.fetch(`${BASE}${path}`, init);

  it("sends nosniff, a referrer policy and a policy that allows nothing on every answer, and no-store on per-user and admin data", async () => {
    const sale = await createSale({ stock: 5 });
    const token = await userToken("headers-buyer");
    const accepted = await checkout(sale.id, token);
    const { orderId } = (await accepted.clone().json()) as { orderId: string };
    const answers: [string, Response][] = [
      ["health", await fetchAs("/healthz")],
      ["checkout 202", accepted],
      ["own order", await fetchAs(`/api/orders/${orderId}`, { headers: bearer(token) })],
      ["admin report", await fetchAs(`/admin/sales/${sale.id}/report`, { headers: bearer(env.ADMIN_TOKEN) })],
      ["401", await fetchAs(`/api/orders/${orderId}`)],
      ["404", await fetchAs("/nope")],
      ["405", await fetchAs("/healthz", { method: "POST" })],
    ];
    for (const [name, res] of answers) {
      expect(res.status, name).toBeLessThan(500);
      expect(res.headers.get("X-Content-Type-Options"), name).toBe("nosniff");
      expect(res.headers.get("Referrer-Policy"), name).toBe("no-referrer");
      expect(res.headers.get("Content-Security-Policy"), name).toBe("default-src 'none'; frame-ancestors 'none'");
      expect(res.headers.get("X-Frame-Options"), name).toBe("DENY");
      expect(res.headers.get("Cache-Control"), name).toBe("no-store");
    }
  });

  it("lets the public sale page keep its short public cache", async () => {
    const sale = await createSale();
    const res = await fetchAs(`/api/sales/${sale.id}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("Cache-Control")).toBe("public, max-age=1");
    expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
  });

  it("gives HTML served under htmlSecurityHeaders a restrictive policy that the app-wide headers keep", async () => {
    const site = new Hono().use(securityHeaders).get("/", htmlSecurityHeaders, (c) => c.html("<h1>drop</h1>"));
    const res = await site.request("/");
    const csp = res.headers.get("Content-Security-Policy") ?? "";
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("object-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain("unsafe-inline");
    expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
  });
});

describe("loopback Host names only (LOOPBACK_HOSTS_ONLY, as npm start runs the Worker)", () => {
  const asHost = (url: string, vars: Partial<Env>) =>
    handleWithVars(vars, new Request(url, { headers: bearer(env.ADMIN_TOKEN) }));

  it("refuses any other Host with 403, answers loopback ones, and is off by default", async () => {
    const sale = await createSale();
    const report = `/admin/sales/${sale.id}/report`;
    const on = { LOOPBACK_HOSTS_ONLY: "true" };
    for (const origin of ["http://rebound.example:8787", "http://127.0.0.1.nip.io:8787", "http://localhost.evil.example"]) {
      const res = await asHost(`${origin}${report}`, on);
      expect(res.status, origin).toBe(403);
      expect(await res.json()).toEqual({ error: { code: "HOST_NOT_ALLOWED", message: expect.any(String) } });
    }
    for (const origin of ["http://127.0.0.1:8787", "http://localhost:8787", "http://[::1]:8787"]) {
      expect((await asHost(`${origin}${report}`, on)).status, origin).toBe(200);
    }
    expect((await asHost(`https://flash.example.com${report}`, {})).status).toBe(200);
  });
});

describe("settings", () => {
  it("refuses requests that need a setting that does not parse with 503 naming it, selling nothing, and serves once it is fixed", async () => {
    const sale = await createSale({ startsAt: new Date(Date.now() - 1_000).toISOString() });
    const buy = async (vars: Partial<Env>) =>
      handleWithVars(
        vars,
        new Request(`${BASE}/api/sales/${sale.id}/checkout`, {
          method: "POST",
          headers: bearer(await userToken("settings-buyer")),
        }),
      );
    const refused = await buy({ IP_RATE_LIMIT: "twenty" });
    expect(refused.status).toBe(503);
    expect(refused.headers.get("Retry-After")).toBe("60");
    expect(await refused.json()).toEqual({
      error: {
        code: "UNAVAILABLE",
        message: `this server's settings are refused: IP_RATE_LIMIT must be a whole number from 0 to 1000000 a second; 0: off (it is "twenty")`,
      },
    });
    expect(await redis.hget(saleKeys(sale.id).meta, "remaining")).toBe(String(sale.stock));
    expect((await buy({})).status).toBe(202);
  });
});
