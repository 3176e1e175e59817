// The pages under public/ as the local stack serves them (Miniflare with the [assets] of
// wrangler.toml, like wrangler dev and production): files first, the API's paths to the
// Worker, one strict CSP that no page breaks with inline script or style.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../../dev/lib/project.ts";
import { randomSecrets } from "../../dev/stack/local-secrets.ts";
import { type LocalWorker, startLocalWorker } from "../../dev/stack/miniflare-worker.ts";

// The Worker alone: nothing here reaches Redis (the routes asked answer before it).
let worker: LocalWorker;
beforeAll(async () => {
  const secrets = randomSecrets();
  worker = await startLocalWorker({
    secrets: {
      ADMIN_TOKEN: secrets.ADMIN_TOKEN,
      JWT_SECRET: secrets.JWT_SECRET,
      ORDER_ID_KEY: secrets.ORDER_ID_KEY,
      UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9",
      UPSTASH_REDIS_REST_TOKEN: secrets.GATEWAY_TOKEN,
    },
  });
});
afterAll(async () => {
  await worker?.stop();
});

const htmlFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? htmlFiles(path.join(dir, entry.name))
      : entry.name.endsWith(".html")
        ? [path.join(dir, entry.name)]
        : [],
  );

describe("the pages", () => {
  it("are served as files with the strict CSP; the console and the reference are never framed", async () => {
    for (const [pathname, title] of [
      ["/", "<title>Flash sale</title>"],
      ["/admin/", "<title>Console · Flash sale</title>"],
      ["/docs", "API reference"],
    ] as const) {
      const res = await worker.fetch(pathname);
      expect(res.status, pathname).toBe(200);
      expect(res.headers.get("Content-Type")).toContain("text/html");
      expect(await res.text()).toContain(title);
      const csp = res.headers.get("Content-Security-Policy") ?? "";
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain("unsafe-inline");
      expect(res.headers.get("X-Frame-Options")).toBe(pathname === "/" ? null : "DENY");
    }
    const openapi = await worker.fetch("/openapi.json");
    expect(((await openapi.json()) as { openapi: string }).openapi).toBe("3.1.0");
    expect((await worker.fetch("/assets/storefront.js")).headers.get("Content-Type")).toContain("javascript");
    // Every page names the icon, so no browser asks for a /favicon.ico that is not there.
    expect((await worker.fetch("/favicon.svg")).headers.get("Content-Type")).toContain("image/svg+xml");
    for (const file of htmlFiles(path.join(ROOT, "public"))) {
      expect(readFileSync(file, "utf8"), path.relative(ROOT, file)).toContain('<link rel="icon" href="/favicon.svg"');
    }
  });

  it("leave the API to the Worker", async () => {
    expect(await (await worker.fetch("/api/config")).json()).toEqual({
      devLogin: false,
      allowedOrigins: [],
      turnstileSiteKey: null,
    });
    // The Worker's own refusal, not a page: 401, or 503 where the global limit on failed admin
    // sign-ins cannot reach Redis (this Worker has none) and fails closed.
    for (const route of ["/admin/sales/1/stats", "/admin/deny-rules", "/admin/webhooks", "/admin/orders/1"]) {
      const res = await worker.fetch(route);
      const { error } = (await res.json()) as { error: { code: string } };
      expect({ status: res.status, code: error.code }, route).toBeOneOf([
        { status: 401, code: "UNAUTHORIZED" },
        { status: 503, code: "UNAVAILABLE" },
      ]);
    }
    const missing = await worker.fetch("/no-such-page");
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("NOT_FOUND");
  });

  it("hold no inline script, style or event handler (the CSP would refuse them)", () => {
    const files = htmlFiles(path.join(ROOT, "public"));
    expect(files.length).toBeGreaterThanOrEqual(3);
    for (const file of files) {
      const html = readFileSync(file, "utf8");
      const name = path.relative(ROOT, file);
      expect(html.match(/<script(?![^>]*\bsrc=)[^>]*>/g), name).toBeNull();
      expect(html.match(/<style\b/g), name).toBeNull();
      expect(html.match(/\sstyle=/g), name).toBeNull();
      expect(html.match(/\son[a-z]+=/g), name).toBeNull();
      expect(html.match(/(src|href)="(https?:)?\/\//g), `${name} loads nothing from another origin`).toBeNull();
    }
  });
});
