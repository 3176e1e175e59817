import { env, SELF } from "cloudflare:test";
import { verify } from "hono/jwt";
import { describe, expect, it } from "vitest";
import { BASE, checkout, createSale, fetchWithVars, LOOPBACK_BASE, waitForConfirmed } from "./helpers";

const login = (body: unknown, vars: Partial<Env> = { DEV_LOGIN: "true" }, base = LOOPBACK_BASE) =>
  fetchWithVars(
    vars,
    "/api/dev/login",
    {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: typeof body === "string" ? body : JSON.stringify(body),
    },
    base,
  );

describe("storefront config", () => {
  it("tells the page whether local sign-in is on, which shops may embed it and the Turnstile site key", async () => {
    const res = await SELF.fetch(`${BASE}/api/config`);
    expect(res.status).toBe(200);
    // The suite runs with Cloudflare's test site key (vitest.config.ts).
    expect(await res.json()).toEqual({ devLogin: false, allowedOrigins: [], turnstileSiteKey: "1x00000000000000000000AA" });
    const on = await fetchWithVars(
      { DEV_LOGIN: "true", ALLOWED_ORIGINS: "https://a.example,https://b.example", TURNSTILE_SITE_KEY: "" },
      "/api/config",
      undefined,
      LOOPBACK_BASE,
    );
    expect(await on.json()).toEqual({
      devLogin: true,
      allowedOrigins: ["https://a.example", "https://b.example"],
      turnstileSiteKey: null,
    });
  });
});

describe("DEV_LOGIN", () => {
  it("is off by default: the route answers like one that does not exist", async () => {
    for (const vars of [{}, { DEV_LOGIN: "false" }]) {
      const res = await login({ userId: "alice" }, vars);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: { code: "NOT_FOUND", message: "no such route" } });
    }
    // Anything but "true" or "false" is refused, never read as one of them.
    const unclear = await login({ userId: "alice" }, { DEV_LOGIN: "1" });
    expect(unclear.status).toBe(503);
    expect(((await unclear.json()) as { error: { message: string } }).error.message).toContain("DEV_LOGIN must be");
  });

  it("acts only on a loopback Host, whatever LOOPBACK_HOSTS_ONLY says", async () => {
    const vars = { DEV_LOGIN: "true", LOOPBACK_HOSTS_ONLY: "false" };
    const elsewhere = await login({ userId: "alice" }, vars, "https://shop.example");
    expect(elsewhere.status).toBe(404);
    expect(await elsewhere.json()).toEqual({ error: { code: "NOT_FOUND", message: "no such route" } });
    expect((await login({ userId: "alice" }, vars, "http://127.0.0.1:8787")).status).toBe(200);
    expect((await login({ userId: "alice" }, vars, "http://[::1]:8787")).status).toBe(200);
    expect((await login({ userId: "alice" }, vars, "http://localhost:8787")).status).toBe(200);
  });

  it("when on, mints a token the API accepts for the chosen name", async () => {
    const res = await login({ userId: " alice.b@shop-1 " });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { token: string; userId: string; expiresAt: string };
    expect(body.userId).toBe("alice.b@shop-1");
    const claims = await verify(body.token, env.JWT_SECRET, "HS256");
    expect(claims.sub).toBe("alice.b@shop-1");
    expect(new Date((claims.exp as number) * 1000).toISOString()).toBe(body.expiresAt);

    const sale = await createSale({ stock: 1 });
    const accepted = await checkout(sale.id, body.token);
    expect(accepted.status).toBe(202);
    await waitForConfirmed([((await accepted.json()) as { orderId: string }).orderId]);
  });

  it("refuses bad names with 400 and mints nothing", async () => {
    for (const body of [
      "{not json",
      [],
      {},
      { userId: "" },
      { userId: "a b" },
      { userId: "x".repeat(65) },
      { userId: "a", admin: true },
    ]) {
      const res = await login(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      const json = (await res.json()) as { token?: string; error: { code: string } };
      expect(json.error.code).toBe("BAD_REQUEST");
      expect(json.token).toBeUndefined();
    }
  });
});
