// The human check on the storefront, in Chromium against `npm start`. Locally (local sign-in
// and Cloudflare's always-passing test site key, as npm start runs) the page shows its own
// stand-in widget, a checkbox whose token the local siteverify stand-in accepts for the sale's
// action: a person ticks it and buys, with nothing loaded from Cloudflare. With a deployment's
// own site key the page loads Cloudflare's script instead, as in production.
import type { Page, Request } from "playwright-core";
import { describe, expect, it } from "vitest";
import { api, BASE, chromiumForThisFile, cspViolations, newContext, screenshot, seriousA11yViolations } from "./browser.ts";

const browser = chromiumForThisFile();

const openSale = (input: Parameters<typeof api.createSale>[0]) =>
  api.createSale({ startsAt: new Date(Date.now() - 60_000).toISOString(), ...input });

async function signIn(page: Page, name: string): Promise<void> {
  await page.getByLabel("Your name").fill(name);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByText(`Signed in as ${name}`).waitFor();
}

const toCloudflare = (requests: Request[]) => requests.filter((r) => new URL(r.url()).hostname.endsWith("cloudflare.com"));

describe("the human check", () => {
  it("locally, a stand-in widget beside Buy (and beside Join the line) passes a real human-check sale", async () => {
    const context = await newContext(browser());
    const requests: Request[] = [];
    context.on("request", (r) => requests.push(r));
    const sale = await openSale({ name: "Checked drop", humanCheck: true, stock: 3 });
    const page = await context.newPage();
    await page.goto(`${BASE}/?sale=${sale.id}`);
    await page.getByRole("heading", { name: "Checked drop" }).waitFor();
    await signIn(page, "local-human");

    // What the hint asks for is on the screen, beside Buy.
    const check = page.locator("#human-check").getByRole("checkbox", { name: "Verify you are human" });
    await check.waitFor();
    expect(await page.locator("#buy-note").textContent()).toBe("Complete the check beside Buy first.");
    expect(await page.locator("#buy-button").getAttribute("aria-disabled")).toBe("true");
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, "storefront-local-human-check", { fullPage: false });

    await check.check();
    await page.locator('#buy-button[aria-disabled="false"]').waitFor();
    expect(await page.locator("#buy-note").textContent()).toBe("");
    await page.getByRole("button", { name: "Buy now" }).click();
    await page
      .locator("#status")
      .filter({ hasText: /Accepted: order \d+ is reserved/ })
      .waitFor();
    // The token is spent: the widget asks again.
    expect(await check.isChecked()).toBe(false);
    await page.locator("#status").filter({ hasText: "Confirmed: it is yours." }).waitFor();
    expect((await api.report(sale.id)).redis.buyers).toBe(1);

    // A queued sale asks at the join: the widget sits beside Join the line, and the pass carries the check.
    const queued = await openSale({
      name: "Checked line",
      humanCheck: true,
      stock: 2,
      queue: { mode: "fifo", admitPerSec: 100 },
    });
    await page.goto(`${BASE}/?sale=${queued.id}`);
    await page.getByRole("heading", { name: "Checked line" }).waitFor();
    expect(await page.getByText("Signed in as local-human").isVisible()).toBe(true); // kept for the tab
    const joinCheck = page.locator("#queue-human-check").getByRole("checkbox", { name: "Verify you are human" });
    await joinCheck.waitFor();
    expect(await page.locator("#human-check").isHidden()).toBe(true);
    expect(await page.locator("#queue-note").textContent()).toBe(
      "Complete the check beside Join the line, then join to buy: buyers are let in a few at a time.",
    );
    await page.getByRole("button", { name: "Join the line" }).click();
    await page.locator("#status").filter({ hasText: "Complete the check beside Join the line first." }).waitFor();
    await joinCheck.check();
    await page.getByRole("button", { name: "Join the line" }).click();
    await page.locator("#queue-note").filter({ hasText: "Your turn: buy now." }).waitFor();
    await page.locator('#buy-button[aria-disabled="false"]').click();
    await page
      .locator("#status")
      .filter({ hasText: /Accepted: order \d+ is reserved/ })
      .waitFor();

    expect(toCloudflare(requests).map((r) => r.url())).toEqual([]);
    expect(await cspViolations(page)).toEqual([]);
  });

  it("with a deployment's own site key, loads Cloudflare Turnstile and sends its token in Human-Check", async () => {
    const context = await newContext(browser());
    // The deployment's settings as a production Worker answers them: its own site key, no local sign-in.
    await context.route(`${BASE}/api/config`, async (route) => {
      const answer = await route.fetch();
      const config = (await answer.json()) as Record<string, unknown>;
      await route.fulfill({ response: answer, json: { ...config, devLogin: false, turnstileSiteKey: "0x4AAAAAAAexampleKey" } });
    });
    // Cloudflare cannot be reached from here: a stand-in script answers its URL and hands out
    // the token the local siteverify stand-in vouches for with the widget's action.
    const scriptLoads: string[] = [];
    await context.route("https://challenges.cloudflare.com/**", (route) => {
      scriptLoads.push(route.request().url());
      return route.fulfill({
        contentType: "text/javascript",
        body: `window.turnstile = {
          tokens: {},
          render(el, options) {
            const id = String(Object.keys(this.tokens).length + 1);
            this.tokens[id] = undefined;
            const button = document.createElement("button");
            button.type = "button";
            button.textContent = "I am human (" + options.sitekey + ")";
            button.onclick = () => { this.tokens[id] = "stand-in." + crypto.randomUUID() + ":" + options.action; options.callback(this.tokens[id]); };
            el.append(button);
            return id;
          },
          getResponse(id) { return this.tokens[id]; },
          reset(id) { this.tokens[id] = undefined; },
        };`,
      });
    });
    const plain = await openSale({ name: "Plain drop" });
    const page = await context.newPage();
    await page.goto(`${BASE}/?sale=${plain.id}`);
    await page.getByRole("heading", { name: "Plain drop" }).waitFor();
    expect(scriptLoads).toEqual([]);
    expect(await page.locator("#human-check").isHidden()).toBe(true);

    const checked = await openSale({ name: "Checked in production", humanCheck: true, stock: 3 });
    const token = await api.userToken("production-human");
    await page.goto(`${BASE}/?sale=${checked.id}#token=${token}`);
    await page.getByRole("button", { name: "Continue as production-human" }).click();
    await page.locator("#buy-note").filter({ hasText: "Complete the check beside Buy first." }).waitFor();
    await page.getByRole("button", { name: "I am human (0x4AAAAAAAexampleKey)" }).click();
    expect(scriptLoads).toHaveLength(1);
    expect(await page.locator("#human-check").getByRole("checkbox").count()).toBe(0); // no local stand-in
    await page.locator('#buy-button[aria-disabled="false"]').waitFor();
    await page.getByRole("button", { name: "Buy now" }).click();
    await page
      .locator("#status")
      .filter({ hasText: /Accepted: order \d+ is reserved/ })
      .waitFor();
    // The token is spent: the widget was reset for a fresh one.
    await page.waitForFunction(
      () => (window as unknown as { turnstile: { getResponse(id: string): unknown } }).turnstile.getResponse("1") === undefined,
    );
    expect(await cspViolations(page)).toEqual([]);
  });
});
