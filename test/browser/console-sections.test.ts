// The console as a shop owner meets it, in Chromium against `npm start`: sections one at a
// time (watch, orders, draw, lanes and codes, funnel, create and edit, order events, rules, settings), each a click away and
// linkable by its fragment; the admin token kept for the tab; no request the console does not
// use, no 404. The create form: empty again after a create, prices typed in the currency's
// units and stored in minor units (none for yen), variants as rows, bad input refused with a
// clear error and nothing sent; "Copy this sale" on purpose, and the edit form in the same units.
import type { Locator, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import {
  api,
  BASE,
  chromiumForThisFile,
  cspViolations,
  newContext,
  openSection,
  screenshot,
  secrets,
  seriousA11yViolations,
  stack,
  unlockConsole,
} from "./browser.ts";

const browser = chromiumForThisFile();

/** Each section: its link in the nav, its fragment, its heading. */
const SECTIONS = [
  ["Watch", "#watch", "Watch a sale"],
  ["Orders", "#orders", "Orders"],
  ["Draw", "#draw", "Draw"],
  ["Lanes and codes", "#lanes", "Lanes and codes"],
  ["Funnel", "#funnel", "Funnel"],
  ["Create and edit", "#create", "Create and edit"],
  ["Order events", "#events", "Order events to the shop"],
  ["Deny rules", "#rules", "Deny rules"],
  ["Settings", "#settings", "Settings"],
] as const;

const shownSections = (page: Page) =>
  page.locator(".console-section").evaluateAll((sections) => sections.filter((s) => !(s as HTMLElement).hidden).map((s) => s.id));

/** A datetime-local value `ms` from now, in the browser's time zone (the contexts here run in UTC, as this process). */
const localInput = (ms: number) => new Date(Date.now() + ms - new Date().getTimezoneOffset() * 60_000).toISOString().slice(0, 16);

/** Presses Create sale and returns the new sale's id from the status line. */
async function created(page: Page, name: string): Promise<string> {
  await page.getByRole("button", { name: "Create sale" }).click();
  const said = await page
    .locator("#create-status")
    .filter({ hasText: new RegExp(`^Created: sale \\d+, ${name}\\.$`) })
    .textContent();
  return /sale (\d+)/.exec(said ?? "")?.[1] as string;
}

/** The create form's fields as a person sees them. */
const createFields = async (create: Locator) => ({
  name: await create.getByLabel("Name").inputValue(),
  description: await create.getByLabel("Description").inputValue(),
  image: await create.getByLabel("Image URL (https)").inputValue(),
  currency: await create.getByLabel("Currency").inputValue(),
  price: await create.getByLabel("Price", { exact: true }).inputValue(),
  stock: await create.getByLabel("Stock", { exact: true }).inputValue(),
  perBuyer: await create.getByLabel("Units per buyer").inputValue(),
  timeToPay: await create.getByLabel("Time to pay (seconds)").inputValue(),
  humanCheck: await create.getByLabel("Buyers prove they are human before buying (Cloudflare Turnstile)").isChecked(),
  waitingRoom: await create.getByLabel("Mode").inputValue(),
  variants: await create.locator("#sale-variant-rows tr").count(),
});

describe("the console's sections", () => {
  it("shows one at a time, each a click away and linkable, keeps the token for the tab, and asks for nothing it does not use", async () => {
    const context = await newContext(browser(), { locale: "en-US" });
    const page = await context.newPage();
    const refused: string[] = [];
    context.on("response", (r) => {
      if (r.status() >= 400) refused.push(`${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`);
    });
    await unlockConsole(page);
    expect(await shownSections(page)).toEqual(["watch"]);
    await page.getByLabel("Sale number").fill(stack.demoSaleId);
    await page.getByRole("button", { name: "Watch", exact: true }).click();
    await page
      .locator("#live-name")
      .filter({ hasText: /^Demo drop/ })
      .waitFor();
    await page.locator("#edit-version").filter({ hasText: /^\d+$/ }).waitFor({ state: "attached" });

    // Each section from the nav: the URL names it, it alone shows, reading starts at its heading.
    for (const [name, fragment, heading] of SECTIONS) {
      await openSection(page, name);
      expect(new URL(page.url()).hash).toBe(fragment);
      expect(await shownSections(page)).toEqual([fragment.slice(1)]);
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe(heading);
      expect(await seriousA11yViolations(page), name).toEqual([]);
    }
    // The engine's figures sit under Advanced, in words.
    await openSection(page, "Watch");
    const advanced = page.getByRole("region", { name: "Advanced" });
    expect(await advanced.getByText("Live stock store", { exact: true }).isVisible()).toBe(true);
    expect(
      await page
        .locator("#live")
        .getByText(/Redis health|Largest Redis key/)
        .count(),
    ).toBe(0);
    await screenshot(page, "console-watch", { fullPage: false });
    // Back goes to the section before.
    await page.goBack();
    await page.locator('.console-nav a[aria-current="page"]', { hasText: "Settings" }).waitFor();

    // A reload keeps the console unlocked, in the section the URL names.
    await openSection(page, "Create and edit");
    await page.reload();
    await page.getByRole("heading", { name: "Create a sale" }).waitFor();
    expect(await page.locator("#unlock").isHidden()).toBe(true);
    expect(await shownSections(page)).toEqual(["create"]);

    // Another tab keeps nothing of this one's: it asks for the token, then opens the section its link names.
    const other = await context.newPage();
    await other.goto(`${BASE}/admin/#rules`);
    await other.getByLabel("Admin token").fill(secrets.ADMIN_TOKEN);
    await other.getByRole("button", { name: "Unlock" }).click();
    await other.getByRole("heading", { name: "Deny rules", level: 1 }).waitFor();
    expect(await shownSections(other)).toEqual(["rules"]);

    // Settings: the shop as the storefront sees it.
    await openSection(page, "Settings");
    const settings = page.locator("#shop-settings");
    await settings.getByText("a local stand-in for Cloudflare Turnstile (npm start): a checkbox").waitFor();
    expect(await settings.textContent()).toContain(stack.shopOrigin);

    expect(refused).toEqual([]);
    for (const p of [page, other]) expect(await cspViolations(p)).toEqual([]);
  });
});

describe("the pages around the console", () => {
  it("the unlock screen and the API reference pass axe, with nothing refused", async () => {
    const context = await newContext(browser());
    const refused: string[] = [];
    context.on("response", (r) => {
      if (r.status() >= 400) refused.push(`${r.status()} ${new URL(r.url()).pathname}`);
    });
    const page = await context.newPage();
    await page.goto(`${BASE}/admin/#create`);
    await page.getByRole("heading", { name: "Unlock the console" }).waitFor();
    expect(await page.locator("#console").isHidden()).toBe(true);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.goto(`${BASE}/docs`);
    await page.getByRole("heading", { level: 1 }).first().waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(refused).toEqual([]);
    expect(await cspViolations(page)).toEqual([]);
  });
});

describe("the console's create and edit forms", () => {
  it("start empty after a create, take prices in the currency's units, make a three-size sale from rows, and refuse bad input with nothing sent", async () => {
    const page = await (await newContext(browser(), { locale: "en-US" })).newPage();
    const creates: string[] = [];
    page.on("request", (r) => {
      if (r.method() === "POST" && new URL(r.url()).pathname === "/admin/sales") creates.push(r.postData() ?? "");
    });
    await unlockConsole(page, "#create");
    const create = page.locator("#create-form");
    const empty = await createFields(create);
    expect(empty).toEqual({
      name: "",
      description: "",
      image: "",
      currency: "USD",
      price: "",
      stock: "100",
      perBuyer: "",
      timeToPay: "",
      humanCheck: false,
      waitingRoom: "off",
      variants: 0,
    });

    // A price in euros, stored in cents.
    await create.getByLabel("Name").fill("Euro drop");
    await create.getByLabel("Description").fill("Forty-nine euros a pair.");
    await create.getByLabel("Currency").fill("EUR");
    await create.getByLabel("Price", { exact: true }).fill("49.00");
    expect(await page.locator("#sale-price-hint").textContent()).toBe("Shows as €49.00 on the storefront.");
    await create.getByLabel("Time to pay (seconds)").fill("300");
    const euroId = await created(page, "Euro drop");
    expect(await api.sale(euroId)).toMatchObject({ price: 4_900, currency: "EUR", description: "Forty-nine euros a pair." });

    // The next sale starts from an empty form, not from the last one's.
    await openSection(page, "Create and edit");
    expect(await createFields(create)).toEqual(empty);

    // Yen have no minor unit: 49.5 is refused, says why, and nothing is sent; 4900 is ¥4,900.
    await create.getByLabel("Name").fill("Yen drop");
    await create.getByLabel("Currency").fill("JPY");
    await create.getByLabel("Price", { exact: true }).fill("49.5");
    const sent = creates.length;
    await page.getByRole("button", { name: "Create sale" }).click();
    await page
      .locator("#create-status")
      .filter({ hasText: "Not a price: write an amount in JPY like 4900 (no decimals)." })
      .waitFor();
    expect(creates.length).toBe(sent);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("sale-price");
    expect(await create.getByLabel("Price", { exact: true }).getAttribute("aria-invalid")).toBe("true");
    await create.getByLabel("Price", { exact: true }).fill("4900");
    expect(await page.locator("#sale-price-hint").textContent()).toBe("Shows as ¥4,900 on the storefront.");
    const yenId = await created(page, "Yen drop");
    expect(await api.sale(yenId)).toMatchObject({ price: 4_900, currency: "JPY" });

    // Three sizes from the row editor: a fourth added and removed again, an id mistyped and fixed.
    await openSection(page, "Create and edit");
    await create.getByLabel("Name").fill("Three sizes");
    await create.getByLabel("Currency").fill("EUR");
    await create.getByLabel("Price", { exact: true }).fill("49.00");
    await create.getByLabel("Starts (your time)").fill(localInput(24 * 3_600_000));
    await create.getByLabel("Ends (your time)").fill(localInput(25 * 3_600_000));
    for (const [i, values] of [
      ["s m", "Small", "3", ""],
      ["m", "Medium", "4", ""],
      ["xl", "Extra large", "9", ""],
      ["l", "Large", "5", "59.00"],
    ].entries()) {
      await create.getByRole("button", { name: "Add a variant" }).click();
      expect(await page.evaluate(() => document.activeElement?.getAttribute("aria-label"))).toBe(`Variant ${i + 1} id`);
      for (const [j, part] of ["id", "label", "stock", "price"].entries()) {
        await create.getByLabel(`Variant ${i + 1} ${part}`).fill(values[j] as string);
      }
    }
    await create.getByRole("button", { name: "Remove variant 3" }).click();
    expect(await create.getByLabel("Variant 3 label").inputValue()).toBe("Large");
    expect(await create.getByLabel("Stock", { exact: true }).isDisabled()).toBe(true);
    expect(await create.getByLabel("Stock", { exact: true }).inputValue()).toBe("12");
    await page.getByRole("button", { name: "Create sale" }).click();
    await page.locator("#create-status").filter({ hasText: "Variant 1: the id is 1 to 32 letters, digits or . _ -" }).waitFor();
    expect(creates.length).toBe(sent + 1);
    expect(await page.evaluate(() => document.activeElement?.getAttribute("aria-label"))).toBe("Variant 1 id");
    await create.getByLabel("Variant 1 id").fill("s");
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.locator("#create-title").evaluate((h) => h.scrollIntoView({ block: "start" }));
    await screenshot(page, "console-create", { fullPage: false });
    const sizedId = await created(page, "Three sizes");
    const sized = await api.sale(sizedId);
    expect(sized.stock).toBe(12);
    expect(sized.variants.map((v) => [v.id, v.label, v.stock, v.price])).toEqual([
      ["s", "Small", 3, 4_900],
      ["m", "Medium", 4, 4_900],
      ["l", "Large", 5, 5_900],
    ]);

    // Copied on purpose: the form takes the watched sale's settings, prices in euros again.
    await page.locator("#live-name").filter({ hasText: "Three sizes" }).waitFor();
    await page.getByRole("button", { name: "Copy this sale" }).click();
    await page
      .locator("#create-status")
      .filter({ hasText: `Copied from sale ${sizedId}` })
      .waitFor();
    expect(await create.getByLabel("Name").inputValue()).toBe("Three sizes");
    expect(await create.getByLabel("Price", { exact: true }).inputValue()).toBe("49.00");
    expect(await create.getByLabel("Variant 3 price").inputValue()).toBe("59.00");
    expect(await create.getByLabel("Variant 1 price").inputValue()).toBe(""); // the sale's own

    // Edited before its start: a size's price, typed in euros.
    const edit = page.locator("#edit-form");
    await page.locator("#edit-sale-id").filter({ hasText: sizedId }).waitFor();
    expect(await edit.getByLabel("Variant 2 price").inputValue()).toBe("49.00");
    await edit.getByLabel("Variant 2 price").fill("45.50");
    await edit.getByRole("button", { name: "Save changes" }).click();
    await page.locator("#edit-status").filter({ hasText: "Saved: variants changed" }).waitFor();
    expect((await api.sale(sizedId)).variants.find((v) => v.id === "m")?.price).toBe(4_550);
    expect(await cspViolations(page)).toEqual([]);
  });
});
