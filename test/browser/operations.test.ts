// Sale operations seen from both pages, in Chromium against `npm start`: an admin pauses a sale
// in the console and a buyer's open storefront page shows it paused with Buy disabled, then
// open again after the resume; an admin's edit (a rename, more stock) reaches the storefront,
// and an edit based on a version someone else changed meanwhile is refused with 412; a drop's
// live controls (a live sale put behind a waiting room, admission held, the notice, the rate)
// reach the buyer's page, and the console logs each.
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import {
  api,
  BASE,
  chromiumForThisFile,
  cspViolations,
  newContext,
  openSection,
  screenshot,
  seriousA11yViolations,
  unlockConsole,
} from "./browser.ts";

const browser = chromiumForThisFile();

/**
 * The next request to `url` reaches the server, but its answer is replaced by a 503, as when
 * the server wrote D1 and then could not reach Redis.
 */
async function answer503Once(page: Page, url: string): Promise<void> {
  await page.route(
    url,
    async (route) => {
      await route.fetch();
      await route.fulfill({
        status: 503,
        json: { error: { code: "UNAVAILABLE", message: "Redis cannot be reached right now" } },
      });
    },
    { times: 1 },
  );
}

const openSale = (input: Parameters<typeof api.createSale>[0]) =>
  api.createSale({ startsAt: new Date(Date.now() - 60_000).toISOString(), ...input });

/** The console, unlocked, watching `saleId` (found in its list of sales, a page at a time), its edit form loaded. */
async function consoleWatching(saleId: string): Promise<Page> {
  const page = await (await newContext(browser())).newPage();
  await unlockConsole(page);
  const watch = page.getByRole("button", { name: `Watch sale ${saleId}`, exact: true });
  const more = page.getByRole("button", { name: "More sales" });
  await page
    .locator("#sales-status")
    .filter({ hasText: /listed/ })
    .waitFor();
  while ((await watch.count()) === 0 && (await more.isVisible())) {
    const rows = await page.locator("#sales-rows tr").count();
    await more.click();
    await page.locator("#sales-rows tr").nth(rows).waitFor();
  }
  await watch.click();
  await page.locator("#edit-version").filter({ hasText: /^\d+$/ }).waitFor({ state: "attached" });
  return page;
}

async function storefront(saleId: string, buyer: string): Promise<Page> {
  const page = await (await newContext(browser())).newPage();
  await page.goto(`${BASE}/?sale=${saleId}`);
  await page.getByLabel("Your name").fill(buyer);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("#buy-button[aria-disabled='false']").waitFor();
  return page;
}

describe("sale operations on both pages", () => {
  it("pausing in the console shows the sale paused on the storefront with Buy disabled; resuming opens it again", async () => {
    const sale = await openSale({ name: "Pause drop", stock: 5 });
    const shop = await storefront(sale.id, "waiting-buyer");
    const admin = await consoleWatching(sale.id);

    // The first press's answer is lost to a 503: the console asks for another press, which finishes it.
    await answer503Once(admin, `${BASE}/admin/sales/${sale.id}/pause`);
    await admin.getByRole("button", { name: "Pause" }).click();
    await admin.locator("#live-status").filter({ hasText: "Recorded, but not yet in force everywhere" }).waitFor();
    expect(await admin.locator("#live-status").textContent()).toContain("Press Pause again to finish");
    await admin.getByRole("button", { name: "Pause" }).click();
    await admin.locator("#live-status").filter({ hasText: "it is now paused" }).waitFor();

    // The buyer's page learns it from its poll: badge, a notice, Buy disabled and why, announced.
    await shop
      .locator("#sale-state")
      .filter({ hasText: /^paused$/ })
      .waitFor();
    expect(await shop.locator("#sale-notice").textContent()).toMatch(/^Paused: buying is on hold/);
    expect(await shop.locator("#buy-button").getAttribute("aria-disabled")).toBe("true");
    expect(await shop.locator("#buy-note").textContent()).toBe("The sale is paused for now.");
    expect(await shop.locator("#status").textContent()).toBe("The sale is paused for now.");
    // Pressed anyway (aria-disabled keeps it focusable), it does nothing: no "Buying…", no order.
    await shop.getByRole("button", { name: "Buy now" }).click({ force: true });
    expect(await shop.locator("#status").textContent()).toBe("The sale is paused for now.");
    expect(await shop.locator("#order").isHidden()).toBe(true);
    expect(await seriousA11yViolations(shop)).toEqual([]);

    await admin.getByRole("button", { name: "Resume" }).click();
    await admin.locator("#live-status").filter({ hasText: "it is now live" }).waitFor();
    await shop.locator("#buy-button[aria-disabled='false']").waitFor();
    expect(await shop.locator("#sale-notice").isHidden()).toBe(true);
    expect(await shop.locator("#status").textContent()).toBe("The sale is open: you can buy now.");
    await shop.getByRole("button", { name: "Buy now" }).click();
    await shop.locator("#status").filter({ hasText: "Confirmed: it is yours." }).waitFor();
    expect((await api.report(sale.id)).redis.buyers).toBe(1); // bought once, after the resume
    for (const page of [shop, admin]) expect(await cspViolations(page)).toEqual([]);
  });

  it("an edit in the console reaches the storefront; an edit on a version changed meanwhile gets 412 until reloaded", async () => {
    const sale = await openSale({ name: "Before rename", description: "Old words.", stock: 5 });
    const shop = await (await newContext(browser())).newPage();
    await shop.goto(`${BASE}/?sale=${sale.id}`);
    await shop.getByRole("heading", { name: "Before rename" }).waitFor();
    const admin = await consoleWatching(sale.id);
    await openSection(admin, "Create and edit");
    const form = admin.locator("#edit-form");
    expect(await form.getByLabel("Name").inputValue()).toBe("Before rename");

    await form.getByLabel("Name").fill("After rename");
    await form.getByLabel("Description").fill("New words.");
    await form.getByLabel("Stock (up only)").fill("8");
    await admin.getByRole("button", { name: "Save changes" }).click();
    await admin.locator("#edit-status").filter({ hasText: "Saved: name, description, stock changed" }).waitFor();
    // (Sale pages are cached up to 500 ms per isolate: the public read catches up within a second.)
    await expect
      .poll(
        async () => {
          const edited = await api.sale(sale.id);
          return [edited.name, edited.description, edited.stock];
        },
        { timeout: 5_000 },
      )
      .toEqual(["After rename", "New words.", 8]);

    await shop.getByRole("heading", { name: "After rename" }).waitFor();
    expect(await shop.locator("#sale-description").textContent()).toBe("New words.");
    await shop.locator("#stock").filter({ hasText: /^8$/ }).waitFor();
    expect(await shop.title()).toBe("After rename · Flash sale");

    // A save answered 503 (recorded in D1, not yet everywhere): Save again finishes it, although
    // the version it was based on has moved (by this very edit).
    await answer503Once(admin, `${BASE}/admin/sales/${sale.id}`);
    await form.getByLabel("Stock (up only)").fill("9");
    await admin.getByRole("button", { name: "Save changes" }).click();
    await admin.locator("#edit-status").filter({ hasText: "Press Save again to finish" }).waitFor();
    await expect.poll(async () => (await api.sale(sale.id)).stock, { timeout: 5_000 }).toBe(9);
    await admin.getByRole("button", { name: "Save changes" }).click();
    await admin.locator("#edit-status").filter({ hasText: "Saved: stock changed" }).waitFor();
    await shop.locator("#stock").filter({ hasText: /^9$/ }).waitFor();

    // Someone else renames it; this form still holds the version it loaded.
    const elsewhere = await api.editSale(sale.id, { name: "Renamed elsewhere" });
    expect(elsewhere.status).toBe(200);
    await form.getByLabel("Name").fill("Mine");
    await admin.getByRole("button", { name: "Save changes" }).click();
    await admin.locator("#edit-status").filter({ hasText: "The sale changed since you loaded it" }).waitFor();
    // Nothing was written since: the other edit's version still holds (If-Match on it succeeds).
    expect((await api.editSale(sale.id, { name: "Renamed elsewhere" }, elsewhere.body?.version)).status).toBe(200);

    await admin.getByRole("button", { name: "Reload the sale" }).click();
    await admin.locator("#edit-status").filter({ hasText: "Reloaded" }).waitFor();
    expect(await form.getByLabel("Name").inputValue()).toBe("Renamed elsewhere");
    await form.getByLabel("Name").fill("Mine after all");
    await admin.getByRole("button", { name: "Save changes" }).click();
    await admin.locator("#edit-status").filter({ hasText: "Saved: name changed" }).waitFor();
    await shop.getByRole("heading", { name: "Mine after all" }).waitFor();

    expect(await seriousA11yViolations(admin)).toEqual([]);
    for (const page of [shop, admin]) expect(await cspViolations(page)).toEqual([]);
  });

  it("a drop's live controls in the console: a live sale put behind a waiting room, admission held with a notice, the rate, each logged", async () => {
    const sale = await openSale({ name: "Live controls drop", stock: 5 });
    const shop = await storefront(sale.id, "controls-buyer");
    const admin = await consoleWatching(sale.id);
    admin.on("dialog", (dialog) => void dialog.accept());

    await admin.getByRole("button", { name: "Put it behind a waiting room now" }).click();
    await admin.locator("#queue-status").filter({ hasText: "The sale is behind a waiting room." }).waitFor();
    // The buyer's page learns it from its poll of the sale: Join the line, Buy closed until their turn.
    await shop.getByRole("button", { name: "Join the line" }).waitFor();
    expect(await shop.locator("#buy-button").getAttribute("aria-disabled")).toBe("true");

    await admin.getByRole("button", { name: "Pause admission" }).click();
    await admin.locator("#queue-status").filter({ hasText: "Admission paused." }).waitFor();
    const notice = "Checkout is catching up: your place is kept.";
    await admin.getByLabel("What every buyer on the sale's page and in its line reads").fill(notice);
    await admin.getByRole("button", { name: "Show the notice" }).click();
    await admin.locator("#notice-status").filter({ hasText: "The notice is shown." }).waitFor();
    await admin.getByLabel("The most let in per second").fill("5");
    await admin.getByRole("button", { name: "Change the rate" }).click();
    await admin.locator("#queue-status").filter({ hasText: "The rate is 5 a second." }).waitFor();

    await shop.getByRole("button", { name: "Join the line" }).click();
    await shop.locator("#queue-note").filter({ hasText: "The shop is holding the line for now" }).waitFor();
    await shop
      .locator("#operator-notice")
      .filter({ hasText: `From the shop: ${notice}` })
      .waitFor();

    const log = admin.locator("#action-rows");
    for (const what of [
      "set the rate to 5 a second",
      `showed the notice "${notice}"`,
      "paused admission",
      "put the sale behind a waiting room",
    ])
      await log.getByText(what, { exact: true }).waitFor();
    expect(await seriousA11yViolations(admin)).toEqual([]);
    await screenshot(admin, "console-drop-controls");

    await admin.getByRole("button", { name: "Resume admission" }).click();
    await shop
      .locator("#queue-note")
      .filter({ hasText: /^Your turn: buy now\./ })
      .waitFor();
    await shop.getByRole("button", { name: "Buy now" }).click();
    await shop.locator("#status").filter({ hasText: "Confirmed: it is yours." }).waitFor();
    for (const page of [shop, admin]) expect(await cspViolations(page)).toEqual([]);
  });
});
