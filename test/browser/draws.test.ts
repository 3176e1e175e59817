// Sales sold by draw on both pages, in Chromium against `npm start` (docs/draws.md). The
// storefront: a size picked, the human check beside Enter, "entered" with the receipt, the
// entry changed, found again after a reload, and withdrawn; in a sale with a presale lane, a
// wrong code refused in words with nothing entered, and the lane's code entering its draw,
// named on the page. The console: a draw sale created
// from the form (entries closing seconds later, the local beacon's next round), its entries per
// size while entries are open, the draw run once they close, its results and their CSV; then
// each entrant's page: the winner's order with Pay (paid with tok_visa), the waitlisted one's
// line and the one not selected.
import { readFileSync } from "node:fs";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { eventually } from "../../dev/lib/wait.ts";
import {
  api,
  BASE,
  chromiumForThisFile,
  cspViolations,
  newContext,
  screenshot,
  seriousA11yViolations,
  stack,
  unlockConsole,
} from "./browser.ts";

const browser = chromiumForThisFile();

const SIZES = [
  { id: "s", label: "S", stock: 1 },
  { id: "m", label: "M", stock: 1 },
  { id: "l", label: "L", stock: 2 },
];

async function signIn(page: Page, name: string): Promise<void> {
  await page.getByLabel("Your name").fill(name);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByText(`Signed in as ${name}`).waitFor();
}

/** Waits until the draw's status line (where the buyer's entry stands) starts with `text`. */
const lineSays = (page: Page, text: string) =>
  page
    .locator("#draw-line")
    .filter({ hasText: new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`) })
    .waitFor();

/** A time of day as the pages write it in en-US: "9:05 AM". */
const TIME = String.raw`\d{1,2}:\d{2}\s[AP]M`;

/** A datetime-local value to the second, `ms` from now, in the browser's time zone (the contexts run in this process's). */
const localInput = (ms: number) => new Date(ms - new Date(ms).getTimezoneOffset() * 60_000).toISOString().slice(0, 19);

describe("a draw on the storefront", () => {
  it("enters with a size after the human check, shows 'entered' and the receipt, changes the entry, keeps it through a reload, and withdraws it", async () => {
    const closesAt = Date.now() + 10 * 60_000;
    const sale = await api.createSale({
      name: "Draw drop",
      variants: SIZES,
      perUserLimit: 2,
      humanCheck: true,
      price: 4_900,
      currency: "EUR",
      paymentWindowSec: 600,
      startsAt: new Date(closesAt).toISOString(),
      endsAt: new Date(closesAt + 3_600_000).toISOString(),
      draw: { opensAt: new Date(Date.now() - 1_000).toISOString(), closesAt: new Date(closesAt).toISOString() },
    });
    const page = await (await newContext(browser(), { locale: "en-US" })).newPage();
    await page.goto(`${BASE}/?sale=${sale.id}`);
    await page.getByRole("heading", { name: "Draw drop" }).waitFor();
    // A draw in place of Buy: the window in words, the countdown to the close.
    expect(await page.locator("#buy").isHidden()).toBe(true);
    expect(await page.locator("#draw-window").textContent()).toMatch(
      /^Entries open until .+: they close in about \d+ minutes\.$/,
    );
    expect(await page.locator("#clock-label").textContent()).toBe("Entries close in");
    await page.locator("#draw-note").filter({ hasText: "Sign in above to enter." }).waitFor();
    await signIn(page, `${sale.id}-ada`);
    await lineSays(page, "You have not entered yet.");

    // The human check beside Enter, then a size.
    const check = page.locator("#draw-human-check").getByRole("checkbox", { name: "Verify you are human" });
    await page.locator("#draw-note").filter({ hasText: "Complete the check beside Enter the draw first." }).waitFor();
    await check.check();
    await page.locator("#draw-note").filter({ hasText: "Choose a size first." }).waitFor();
    expect(await page.locator("#draw-enter").getAttribute("aria-disabled")).toBe("true");
    await page.getByRole("radio", { name: "M, 1 left" }).check();
    await page.getByRole("button", { name: "Enter the draw" }).click();
    await lineSays(page, "You are entered: M × 1. You can change or withdraw your entry until");
    const token = await api.userToken(`${sale.id}-ada`);
    const entered = (await api.myEntry(sale.id, token)).body;
    expect(entered).toMatchObject({ status: "entered", variant: "m", quantity: 1 });
    // The receipt is the entrant's, and the page says what it proves; the check was spent.
    expect(await page.locator("#draw-receipt-value").textContent()).toBe(entered?.receipt);
    expect(await page.locator("#draw-proves").textContent()).toContain("Only you get this receipt.");
    expect(await check.isChecked()).toBe(false);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, "storefront-draw");

    // Changed: another size and two units, after a fresh check.
    await page.getByRole("radio", { name: "L, 2 left" }).check();
    await page.locator("#draw-entry").getByLabel("Quantity").selectOption("2");
    await check.check();
    await page.getByRole("button", { name: "Change entry" }).click();
    await lineSays(page, "You are entered: L × 2.");
    expect((await api.myEntry(sale.id, token)).body).toMatchObject({ status: "entered", variant: "l", quantity: 2 });

    // A reload finds the entry again, the picker set to it.
    await page.reload();
    await lineSays(page, "You are entered: L × 2.");
    expect(await page.getByRole("radio", { name: "L, 2 left" }).isChecked()).toBe(true);
    expect(await page.locator("#draw-entry").getByLabel("Quantity").inputValue()).toBe("2");

    // Withdrawn: out of the draw, and the keyboard on the button that enters again.
    await page.getByRole("button", { name: "Withdraw" }).click();
    await lineSays(page, "You withdrew your entry: it is not in the draw. You can enter again until");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("draw-enter");
    expect((await api.myEntry(sale.id, token)).body?.status).toBe("withdrawn");
    expect((await api.draw(sale.id)).body?.entries).toBe(0);
    expect(await seriousA11yViolations(page)).toEqual([]);

    // Leaving the sale gives Buy's form back its size picker and quantity (the draw borrowed them).
    await page.getByRole("link", { name: "All sales" }).click();
    await page.getByRole("heading", { name: "Sales" }).waitFor();
    expect(await page.locator("#buy > #variant-field + #quantity-field").count()).toBe(1);
    expect(await page.locator("#draw-entry #variant-field").count()).toBe(0);
    expect(await cspViolations(page)).toEqual([]);
  });

  it("with a presale lane: a wrong code is refused in words and nothing entered; the lane's code enters the lane's draw, named with when its winners buy", async () => {
    const closesAt = Date.now() + 10 * 60_000;
    const iso = (ms: number) => new Date(ms).toISOString();
    const sale = await api.createSale({
      name: "Lane draw",
      variants: SIZES,
      startsAt: iso(closesAt + 10 * 60_000),
      endsAt: iso(closesAt + 3_600_000),
      draw: { opensAt: iso(Date.now() - 1_000), closesAt: iso(closesAt) },
      lanes: [{ name: "members", startsAt: iso(closesAt), stock: 1 }],
    });
    const [code] = (await api.codeBatch(sale.id, "members", { count: 1 })).body?.codes ?? [];
    const page = await (await newContext(browser(), { locale: "en-US" })).newPage();
    await page.goto(`${BASE}/?sale=${sale.id}`);
    await page.getByRole("heading", { name: "Lane draw" }).waitFor();
    // Who can buy when: each draw's winners, from its start.
    expect(await page.locator("#lane-list li").allTextContents()).toEqual([
      expect.stringMatching(new RegExp(`^Members' draw: winners buy from ${TIME}$`)),
      expect.stringMatching(new RegExp(`^Public draw: winners buy from ${TIME}$`)),
    ]);
    await signIn(page, `${sale.id}-cy`);
    await lineSays(page, "You have not entered yet.");
    const field = page.getByLabel("Have a presale code? Enter it to enter your lane's draw");
    await page.getByRole("radio", { name: "S, 1 left" }).check();

    // A code that is not one of the sale's: said in words, the field marked, nothing entered.
    await field.fill("ABCD-EFGH-JKMN");
    await page.getByRole("button", { name: "Enter the draw" }).click();
    await page
      .locator("#status")
      .filter({ hasText: /^Not entered\. That code is not valid for you: check it as written/ })
      .waitFor();
    expect(await field.getAttribute("aria-invalid")).toBe("true");
    const token = await api.userToken(`${sale.id}-cy`);
    expect((await api.myEntry(sale.id, token)).code).toBe("NOT_ENTERED");
    await lineSays(page, "You have not entered yet.");

    // The lane's code, typed as people type: the entry is in the members' draw, and the field goes.
    await field.fill((code as string).toLowerCase());
    expect(await field.getAttribute("aria-invalid")).toBeNull();
    await page.getByRole("button", { name: "Enter the draw" }).click();
    await lineSays(page, `You are entered in the members' draw: S × 1. Its winners get their orders from `);
    expect((await api.myEntry(sale.id, token)).body).toMatchObject({ status: "entered", variant: "s", lane: "members" });
    await field.waitFor({ state: "hidden" });
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(await cspViolations(page)).toEqual([]);
  });
});

describe("a draw in the console", () => {
  it("creates a draw sale, shows entries per size, runs the draw after the close, shows the results and exports them; a winner pays, the others read where they stand", {
    timeout: 180_000,
  }, async () => {
    const page = await (await newContext(browser(), { locale: "en-US" })).newPage();
    let creates = 0;
    page.on("request", (r) => {
      if (r.method() === "POST" && new URL(r.url()).pathname === "/admin/sales") creates += 1;
    });
    await unlockConsole(page, "#create");
    const create = page.locator("#create-form");
    await create.getByLabel("Name").fill("Console draw");
    await create.getByLabel("Currency").fill("EUR");
    await create.getByLabel("Price", { exact: true }).fill("49.00");
    await create.getByLabel("Time to pay (seconds)").fill("600");
    for (const [i, size] of SIZES.slice(0, 2).entries()) {
      await create.getByRole("button", { name: "Add a variant" }).click();
      for (const [part, value] of [
        ["id", size.id],
        ["label", size.label],
        ["stock", String(size.stock)],
      ]) {
        await create.getByLabel(`Variant ${i + 1} ${part}`).fill(value as string);
      }
    }
    // Entries close seconds from now, when the sale (its winners paying) starts; the
    // local beacon's first round after the close is mixed into the shuffle.
    const closesAt = Math.ceil((Date.now() + 20_000) / 1000) * 1000;
    const beacon = `http://127.0.0.1:${stack.BEACON_PORT}`;
    const info = (await (await fetch(`${beacon}/info`)).json()) as { period: number; genesis_time: number };
    const round = Math.ceil((closesAt / 1000 - info.genesis_time) / info.period) + 2;
    await create.getByLabel("Sold by draw").check();
    // Entries closing after the start are refused on the page, with nothing sent.
    await create.getByLabel("Starts (your time)").fill(localInput(closesAt));
    await create.getByLabel("Entries close (your time)").fill(localInput(closesAt + 60_000));
    await page.getByRole("button", { name: "Create sale" }).click();
    await page
      .locator("#create-status")
      .filter({ hasText: "Entries close at or before the sale starts: the winners pay from the start." })
      .waitFor();
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("sale-draw-closes");
    expect(creates).toBe(0);
    await create.getByLabel("Entries close (your time)").fill(localInput(closesAt));
    await create.getByLabel("Beacon URL (optional)").fill(beacon);
    await create.getByLabel("Beacon round").fill(String(round));
    await page.getByRole("button", { name: "Create sale" }).click();
    const said = await page
      .locator("#create-status")
      .filter({ hasText: /^Created: sale \d+, Console draw\.$/ })
      .textContent();
    const saleId = /sale (\d+)/.exec(said ?? "")?.[1] as string;
    expect((await api.sale(saleId)).draw).toEqual({
      opensAt: expect.any(String),
      closesAt: new Date(closesAt).toISOString(),
      beacon: { url: beacon, round },
    });

    // Four entrants while entries are open: three for the one S, one for the one M.
    const names = ["a", "b", "c", "d"].map((n) => `${saleId}-${n}`);
    const tokens = await Promise.all(names.map((n) => api.userToken(n)));
    const entries = await Promise.all(tokens.map((token, i) => api.enterDraw(saleId, token, { variant: i < 3 ? "s" : "m" })));
    expect(entries.map((e) => e.status)).toEqual([201, 201, 201, 201]);

    // The watched sale links to its draw; the Draw section counts the entries per size.
    await page.getByRole("link", { name: "its entries, commitment and results" }).click();
    await page.getByRole("heading", { name: `Draw of sale ${saleId}` }).waitFor();
    const sizes = page.locator("#draw-variant-rows");
    await sizes.getByRole("row", { name: "S (s) 1 3 – –" }).waitFor();
    await sizes.getByRole("row", { name: "M (m) 1 1 – –" }).waitFor();
    expect(await page.locator("#draw-state").textContent()).toBe("open");
    const commitment = page.locator("#draw-commitment");
    await commitment.getByText((await api.draw(saleId)).body?.seedCommitment as string).waitFor();
    await commitment.getByText(`${beacon}, round ${round}`).waitFor();
    expect(await page.locator("#draw-run").getAttribute("aria-disabled")).toBe("true");
    expect(await page.locator("#draw-run-note").textContent()).toMatch(/^The draw can run once entries close, at /);
    expect(await seriousA11yViolations(page)).toEqual([]);

    // After the close: the draw run from the console, through the beacon's round, to its results.
    // (npm start's cron may start it first: then the button has nothing left to do.)
    await eventually("the entries to close", async () => Date.now() > closesAt + 500, 60_000);
    await page.locator('#draw-run[aria-disabled="false"], #draw-state[data-state="drawn"]').first().waitFor();
    await page.getByRole("button", { name: "Run the draw now" }).click();
    await page.locator("#draw-state").filter({ hasText: "drawn" }).waitFor({ timeout: 60_000 });
    await sizes.getByRole("row", { name: "S (s) 1 3 1 1" }).waitFor();
    await sizes.getByRole("row", { name: "M (m) 1 1 1 0" }).waitFor();
    expect(await page.locator("#draw-selected").textContent()).toBe("2");
    expect(await page.locator("#draw-waitlisted").textContent()).toBe("1");
    const view = (await api.draw(saleId)).body;
    await commitment.getByText(view?.entriesRoot as string).waitFor();
    await commitment.getByText(view?.seed as string).waitFor();
    expect(view?.beacon?.randomness).toMatch(/^[0-9a-f]{64}$/);
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.locator("#watched-draw-title").evaluate((h) => h.scrollIntoView({ block: "start" }));
    await screenshot(page, "console-draw", { fullPage: false });

    // The results as CSV: the committed list in tree order, each entry with its result.
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "Download results CSV" }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`sale-${saleId}-draw.csv`);
    const lines = readFileSync(await download.path(), "utf8")
      .split("\r\n")
      .filter(Boolean);
    const published = (await api.drawEntries(saleId)).body?.leaves ?? [];
    expect(lines).toEqual([
      "index,leafHash,entrant,variant,quantity,result",
      ...published.map((l) => [l.index, l.leafHash, l.entrant, l.variant, l.quantity, l.result].join(",")),
    ]);
    expect(published.map((l) => l.result).sort()).toEqual(["not_selected", "selected", "selected", "waitlisted"]);
    await page
      .locator("#draw-status")
      .filter({ hasText: `Downloaded sale-${saleId}-draw.csv: 4 entries.` })
      .waitFor();
    expect(await cspViolations(page)).toEqual([]);

    // Each of the three who entered for S reads where they stand; the winner pays.
    const results = await Promise.all(tokens.slice(0, 3).map(async (t) => (await api.myEntry(saleId, t)).body?.status));
    expect([...results].sort()).toEqual(["not_selected", "selected", "waitlisted"]);
    for (const [i, result] of results.entries()) {
      const buyer = await (await newContext(browser(), { locale: "en-US" })).newPage();
      await buyer.goto(`${BASE}/?sale=${saleId}`);
      await buyer.getByRole("heading", { name: "Console draw" }).waitFor();
      await signIn(buyer, names[i] as string);
      expect(await buyer.locator("#draw-window").textContent()).toMatch(/^Drawn at /);
      if (result === "selected") {
        await lineSays(buyer, "You were selected: S × 1. Your order is below.");
        await buyer.getByRole("button", { name: "Pay €49.00" }).waitFor({ timeout: 30_000 });
        expect(await buyer.locator("#order-state").textContent()).toBe("awaiting payment");
        await screenshot(buyer, "storefront-draw-selected");
        await buyer.getByRole("button", { name: "Pay €49.00" }).click();
        await buyer.locator("#status").filter({ hasText: "Paid: it is yours." }).waitFor();
      } else if (result === "waitlisted") {
        await lineSays(buyer, "You are on the waitlist: if a unit comes back it is offered to you.");
      } else {
        await lineSays(buyer, "You were not selected in this draw.");
      }
      // Each committed entry proves its place in the list under the published root.
      await buyer
        .locator("#draw-root")
        .filter({ hasText: view?.entriesRoot as string })
        .waitFor();
      expect(await buyer.locator("#draw-proves").textContent()).toMatch(/^Your entry is number \d of the 4 in the list/);
      expect(await seriousA11yViolations(buyer)).toEqual([]);
      expect(await cspViolations(buyer)).toEqual([]);
    }
  });
});
