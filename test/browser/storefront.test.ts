// The storefront in Chromium against `npm start`: signing in locally, buying and following
// the order to its end, a second buyer finding it sold out, the 429 wait shown and retried,
// a purchase by keyboard alone, and every page's CSP, layout stability and accessibility.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  api,
  BASE,
  cspViolations,
  launchChromium,
  layoutShift,
  newContext,
  PHONE,
  screenshot,
  scrollsSideways,
  seriousA11yViolations,
} from "./browser.ts";

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

const statusLine = (page: Page) => page.locator("#status");

/** Waits until the status line reads `pattern`, and returns what it said. */
async function statusReads(page: Page, pattern: RegExp, timeout = 15_000): Promise<string> {
  await page.waitForFunction(
    (source) => new RegExp(source).test(document.getElementById("status")?.textContent ?? ""),
    pattern.source,
    { timeout },
  );
  return (await statusLine(page).textContent()) ?? "";
}

async function signIn(page: Page, name: string): Promise<void> {
  await page.getByLabel("Your name").fill(name);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByText(`Signed in as ${name}`).waitFor();
}

/** A sale open now: one minute in, an hour to go. */
const openSale = (input: Parameters<typeof api.createSale>[0] = {}) =>
  api.createSale({ name: "Limited sneakers", startsAt: new Date(Date.now() - 60_000).toISOString(), ...input });

describe("the storefront", () => {
  it("signs in, buys, follows the order from pending to confirmed; a second buyer finds it sold out", async () => {
    const sale = await openSale({ stock: 1 });
    const first = await (await newContext(browser)).newPage();
    const second = await (await newContext(browser)).newPage();
    for (const page of [first, second]) await page.goto(`${BASE}/?sale=${sale.id}`);
    await first.getByRole("heading", { name: "Limited sneakers" }).waitFor();
    expect(await first.locator("#remaining").textContent()).toBe("1");

    await signIn(first, "ada");
    await signIn(second, "grace");
    await first.getByRole("button", { name: "Buy now" }).click();
    expect(await statusReads(first, /Accepted: order \d+ is reserved/)).toMatch(/order \d+/);
    await statusReads(first, /Confirmed: it is yours/);
    expect(await first.locator("#order-state").textContent()).toBe("confirmed");
    await first.locator("#remaining").filter({ hasText: "0" }).waitFor();
    await screenshot(first, "storefront-sale");

    // The other buyer presses Buy while the page may still show a unit: either the server
    // refuses it or the page already knows (and the press does nothing); either way it says so.
    await second.getByRole("button", { name: "Buy now" }).click({ force: true });
    await second.getByText("Sold out: every unit is taken.").first().waitFor();
    expect(await second.locator("#order").isHidden()).toBe(true);

    for (const page of [first, second]) {
      expect(await cspViolations(page)).toEqual([]);
      expect(await seriousA11yViolations(page)).toEqual([]);
    }
  });

  it("shows the wait on 429 and retries by itself after Retry-After, buying once", async () => {
    const sale = await openSale({ stock: 5, admission: { rate: 1, burst: 1 } });
    const page = await (await newContext(browser)).newPage();
    await page.goto(`${BASE}/?sale=${sale.id}`);
    await signIn(page, "patient");
    await page.locator("#buy-button[aria-disabled='false']").waitFor();

    // Someone else takes the bucket's only token; the page's checkout a moment later gets 429.
    expect((await api.checkout(sale.id, await api.userToken("quicker"))).status).toBe(202);
    await page.getByRole("button", { name: "Buy now" }).click();
    expect(await statusReads(page, /Many buyers right now: trying again in \d+ s/)).toBeTruthy();
    await statusReads(page, /Accepted: order \d+ is reserved/);
    await statusReads(page, /Confirmed/);
    const report = await api.report(sale.id);
    expect(report.redis.buyers).toBe(2); // the retry bought once
    expect(await cspViolations(page)).toEqual([]);
  });

  it("can be used by keyboard alone, in a sensible order", async () => {
    const sale = await openSale({ stock: 3 });
    const page = await (await newContext(browser)).newPage();
    await page.goto(`${BASE}/?sale=${sale.id}`);
    await page.getByRole("heading", { name: "Limited sneakers" }).waitFor();

    const focused = () => page.evaluate(() => document.activeElement?.id || document.activeElement?.textContent?.trim() || "");
    const order: string[] = [];
    for (let i = 0; i < 4; i++) {
      await page.keyboard.press("Tab");
      order.push(await focused());
    }
    expect(order).toEqual(["Skip to content", "Flash sale", "sign-in-name", "Sign in"]);

    await page.keyboard.press("Shift+Tab");
    await page.keyboard.type("keys-only");
    await page.keyboard.press("Enter");
    await page.getByText("Signed in as keys-only").waitFor();
    expect(await focused()).toBe("buy-button"); // the sign-in form is gone: focus goes to Buy
    await page.locator("#buy-button[aria-disabled='false']").waitFor();
    await page.keyboard.press("Enter");
    await statusReads(page, /Confirmed: it is yours/);
    expect(await focused()).toBe("buy-button"); // focus stays put while the order settles
  });

  it("is readable on a phone, keeps its layout still while numbers change, and passes axe", async () => {
    const sale = await openSale({ name: "Phone drop", stock: 40 });
    const page = await (await newContext(browser, PHONE)).newPage();
    await page.goto(`${BASE}/?sale=${sale.id}`);
    await page.getByRole("heading", { name: "Phone drop" }).waitFor();
    await signIn(page, "on-the-go");

    // Other buyers take units while the page polls: remaining counts down, the clock ticks.
    for (let i = 0; i < 5; i++) await api.checkout(sale.id, await api.userToken(`crowd-${i}`));
    await page.locator("#remaining").filter({ hasText: "35" }).waitFor();
    expect(await layoutShift(page)).toBeLessThan(0.01);
    expect(await scrollsSideways(page)).toBe(false);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, "storefront-phone");

    await page.getByRole("link", { name: "All sales" }).click();
    await page.getByRole("heading", { name: "Sales" }).waitFor();
    expect(await scrollsSideways(page)).toBe(false);
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(await cspViolations(page)).toEqual([]);
  });
});
