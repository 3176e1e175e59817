import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { bearer, createSale, fetchWithVars, userToken, waitForConfirmed } from "./helpers";

const SHOP = "https://shop.example";
const vars = { ALLOWED_ORIGINS: ` ${SHOP}/, https://www.shop.example` };

const preflight = (path: string, origin: string, method = "POST") =>
  fetchWithVars(vars, path, {
    method: "OPTIONS",
    headers: { Origin: origin, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": "authorization" },
  });

describe("CORS", () => {
  it("answers a listed shop's preflight for the public API, echoing its origin, never *", async () => {
    const sale = await createSale();
    const res = await preflight(`/api/sales/${sale.id}/checkout`, SHOP);
    expect(res.status).toBe(204);
    expect(res.headers.get("Access-Control-Allow-Origin")).toBe(SHOP);
    expect(res.headers.get("Access-Control-Allow-Methods")).toBe("GET, POST, DELETE");
    expect(res.headers.get("Access-Control-Allow-Headers")).toBe(
      "Authorization, Content-Type, Idempotency-Key, Queue-Pass, Queue-Ticket, Human-Check, Access-Code",
    );
    expect(res.headers.get("Access-Control-Allow-Credentials")).toBeNull();
    expect(res.headers.get("Vary")).toContain("Origin");
  });

  it("lets a listed shop read the API's answers and its rate-limit headers", async () => {
    const sale = await createSale({ stock: 5, admission: { rate: 1, burst: 1 } });
    const buy = async (user: string) =>
      fetchWithVars(vars, `/api/sales/${sale.id}/checkout`, {
        method: "POST",
        headers: { Origin: SHOP, ...bearer(await userToken(user)) },
      });
    const accepted = await buy("cors-1");
    expect(accepted.status).toBe(202);
    expect(accepted.headers.get("Access-Control-Allow-Origin")).toBe(SHOP);
    const limited = await buy("cors-2");
    expect(limited.status).toBe(429);
    expect(limited.headers.get("Access-Control-Allow-Origin")).toBe(SHOP);
    expect(limited.headers.get("Access-Control-Expose-Headers")).toBe(
      "Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Queue-Ticket",
    );
    expect(limited.headers.get("Retry-After")).toBeTruthy();
    await waitForConfirmed([((await accepted.json()) as { orderId: string }).orderId]);
  });

  it("gives an origin that is not listed nothing to read, and refuses its preflight", async () => {
    const sale = await createSale();
    const read = await fetchWithVars(vars, `/api/sales/${sale.id}`, { headers: { Origin: "https://evil.example" } });
    expect(read.status).toBe(200); // a server cannot stop a GET; the browser hides the answer
    expect(read.headers.get("Access-Control-Allow-Origin")).toBeNull();
    expect(read.headers.get("Vary")).toContain("Origin");
    const pre = await preflight(`/api/sales/${sale.id}/checkout`, "https://evil.example");
    expect(pre.status).toBe(403);
    expect(pre.headers.get("Access-Control-Allow-Origin")).toBeNull();
    expect(((await pre.json()) as { error: { code: string } }).error.code).toBe("CORS_ORIGIN_DENIED");
  });

  it("is same origin only when ALLOWED_ORIGINS is empty, and never lists *", async () => {
    const res = await fetchWithVars({ ALLOWED_ORIGINS: "" }, "/api/config", { headers: { Origin: SHOP } });
    expect(res.headers.get("Access-Control-Allow-Origin")).toBeNull();
    expect(((await res.json()) as { allowedOrigins: string[] }).allowedOrigins).toEqual([]);
    // "*" is no origin: the setting is refused, and nothing is opened to anyone.
    const star = await fetchWithVars({ ALLOWED_ORIGINS: "*" }, "/api/config", { headers: { Origin: SHOP } });
    expect(star.status).toBe(503);
    expect(star.headers.get("Access-Control-Allow-Origin")).toBeNull();
    expect(((await star.json()) as { error: { message: string } }).error.message).toContain("ALLOWED_ORIGINS must be");
    expect((await preflight("/api/config", SHOP)).status).toBe(204); // the listed shop, for contrast
  });

  it("never opens admin routes to another origin, even a listed shop", async () => {
    const sale = await createSale();
    const pre = await preflight(`/admin/sales/${sale.id}/report`, SHOP, "GET");
    expect(pre.status).toBe(403);
    expect(pre.headers.get("Access-Control-Allow-Origin")).toBeNull();
    const res = await fetchWithVars(vars, `/admin/sales/${sale.id}/report`, {
      headers: { Origin: SHOP, ...bearer(env.ADMIN_TOKEN) },
    });
    expect(res.status).toBe(403);
    expect(res.headers.get("Access-Control-Allow-Origin")).toBeNull();
  });
});
