// The storefront when the buyer comes back to a sale while holding an order, in Chromium
// against `npm start`: a reload in the payment window keeps the sign-in (for the tab) and the
// order on the sale page, with its countdown, Pay and Cancel; another tab, signed in again,
// finds the same order from the buyer's list; no token ever shows in the address bar.
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { api, BASE, chromiumForThisFile, cspViolations, newContext, seriousA11yViolations } from "./browser.ts";

const browser = chromiumForThisFile();

async function signIn(page: Page, name: string): Promise<void> {
  await page.getByLabel("Your name").fill(name);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByText(`Signed in as ${name}`).waitFor();
}

/** What the sale page shows of the order: its number and state, its countdown, and what can be done. */
async function orderShown(page: Page) {
  await page
    .locator("#order-state")
    .filter({ hasText: /^awaiting payment$/ })
    .waitFor();
  return {
    orderId: await page.locator("#order-id").textContent(),
    expiry: await page.locator("#order-expiry").textContent(),
    pay: await page.getByRole("button", { name: /^Pay/ }).isVisible(),
    cancel: await page.getByRole("button", { name: "Cancel order" }).isVisible(),
    buyNote: await page.locator("#buy-note").textContent(),
  };
}

describe("the storefront, coming back to a held order", () => {
  it("keeps the order on the sale page through a reload in the payment window, and shows it in another tab once signed in", async () => {
    const sale = await api.createSale({
      name: "Sized return drop",
      startsAt: new Date(Date.now() - 60_000).toISOString(),
      price: 4_900,
      currency: "EUR",
      paymentWindowSec: 600,
      variants: [
        { id: "s", label: "Small", stock: 2 },
        { id: "m", label: "Medium", stock: 2 },
      ],
    });
    const context = await newContext(browser(), { locale: "en-US" });
    const page = await context.newPage();
    await page.goto(`${BASE}/?sale=${sale.id}`);
    await page.getByRole("heading", { name: "Sized return drop" }).waitFor();
    await signIn(page, "returner");
    await page.getByRole("radio", { name: "Medium, 2 left" }).check();
    await page.getByRole("button", { name: "Buy now" }).click();
    await page
      .locator("#status")
      .filter({ hasText: /Accepted: order \d+/ })
      .waitFor();
    const orderId = await page.locator("#order-id").textContent();

    // Reloaded at once (the order may still be pending, or already awaiting payment): still
    // signed in, and the order is there with its countdown, Pay and Cancel.
    await page.reload();
    await page.getByRole("heading", { name: "Sized return drop" }).waitFor();
    expect(await page.getByText("Signed in as returner").isVisible()).toBe(true);
    const shown = await orderShown(page);
    expect(shown).toMatchObject({ orderId, pay: true, cancel: true, buyNote: "You hold an order in this sale (below)." });
    expect(shown.expiry).toMatch(/^(10:00|0\d:[0-5]\d)$/);
    expect(await page.locator("#order-variant").textContent()).toBe("Medium");
    expect(await page.locator("#status").textContent()).toBe("Reserved for you: pay before the time runs out.");
    expect(page.url()).toBe(`${BASE}/?sale=${sale.id}`); // no token in the address bar
    expect(await seriousA11yViolations(page)).toEqual([]);

    // Another tab keeps nothing of this one's sign-in; signed in there, the buyer sees the same order.
    const other = await context.newPage();
    await other.goto(`${BASE}/?sale=${sale.id}`);
    await other.getByRole("heading", { name: "Sized return drop" }).waitFor();
    expect(await other.locator("#sign-in").isVisible()).toBe(true);
    await signIn(other, "returner");
    expect((await orderShown(other)).orderId).toBe(orderId);

    // Paid from the reloaded page; signed out, the order goes with the buyer.
    await page.getByRole("button", { name: /^Pay/ }).click();
    await page.locator("#status").filter({ hasText: "Paid: it is yours." }).waitFor();
    await page.getByRole("button", { name: "Sign out" }).click();
    expect(await page.locator("#order").isHidden()).toBe(true);
    await page.reload();
    await page.getByRole("heading", { name: "Sized return drop" }).waitFor();
    expect(await page.locator("#sign-in").isVisible()).toBe(true);
    for (const p of [page, other]) expect(await cspViolations(p)).toEqual([]);
  });
});
