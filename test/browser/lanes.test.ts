// Presale lanes on both pages, in Chromium against `npm start` (docs/lanes.md). The storefront:
// a shopper in the members' lane's window sees who can buy when and is asked for the code; a
// wrong code is refused in words, the right one buys, and the next shopper hears that the
// lane's units are sold and when a later lane opens; on a sale whose public start comes during
// the test, the field goes at the start and Buy needs no code. The console: a sale created with
// lanes from its form (bad lanes refused in words, nothing sent), its Lanes and codes section:
// batches of codes made, shown once, copied and downloaded as the route's CSV, one revoked after
// a confirmation (its codes then refused), the counts per lane; and a staff pass minted on a
// sale with a waiting room, shown once, copied and logged, that buys past the line.
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
  openSection,
  screenshot,
  seriousA11yViolations,
  unlockConsole,
} from "./browser.ts";

const browser = chromiumForThisFile();

const iso = (ms: number) => new Date(ms).toISOString();
/** A time of day as the pages write it in en-US: "9:05 AM". */
const TIME = String.raw`\d{1,2}:\d{2}\s[AP]M`;
const CODE = /^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/;

async function signIn(page: Page, name: string): Promise<void> {
  await page.getByLabel("Your name").fill(name);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByText(`Signed in as ${name}`).waitFor();
}

/** Waits until the element `id` reads `pattern` (a regular expression's source). */
const reads = (page: Page, id: string, pattern: string, timeout = 15_000) =>
  page.waitForFunction(
    ([i, p]) => new RegExp(p as string).test(document.getElementById(i as string)?.textContent ?? ""),
    [id, pattern],
    {
      timeout,
    },
  );

/** A datetime-local value `ms` from now, in the browser's time zone (the contexts run in this process's). */
const localInput = (ms: number) => {
  const at = Date.now() + ms;
  return new Date(at - new Date(at).getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};

describe("presale lanes on the storefront", () => {
  it("asks a shopper in the members' window for the code, refuses a wrong one in words, buys with the right one, and tells the next one the lane is sold", async () => {
    const now = Date.now();
    const sale = await api.createSale({
      name: "Members' drop",
      stock: 5,
      price: 9_900,
      currency: "EUR",
      paymentWindowSec: 600,
      startsAt: iso(now + 30 * 60_000),
      endsAt: iso(now + 2 * 3_600_000),
      lanes: [
        { name: "members", startsAt: iso(now - 1_000), stock: 1 },
        { name: "fans", startsAt: iso(now + 15 * 60_000) },
      ],
    });
    const codes = (await api.codeBatch(sale.id, "members", { count: 2 })).body?.codes ?? [];
    const context = await newContext(browser(), { locale: "en-US" });
    const page = await context.newPage();
    await page.goto(`${BASE}/?sale=${sale.id}`);
    await page.getByRole("heading", { name: "Members' drop" }).waitFor();

    // Who can buy when, in words, the members' lane marked open, the countdown to the next lane.
    const lanes = page.getByRole("region", { name: "Who can buy, and when" });
    expect(await lanes.getByRole("listitem").allTextContents()).toEqual([
      expect.stringMatching(new RegExp(`^Members from ${TIME} · 1 left · open now$`)),
      expect.stringMatching(new RegExp(`^Fans from ${TIME}$`)),
      expect.stringMatching(new RegExp(`^Everyone from ${TIME}$`)),
    ]);
    expect(await lanes.locator('[aria-current="true"]').textContent()).toMatch(/^Members from/);
    expect(await page.locator("#clock-label").textContent()).toBe("Fans can buy in");

    // Signed in, the shopper is asked for the members' code beside Buy.
    await signIn(page, `${sale.id}-ann`);
    const field = page.getByLabel("Members: enter your code");
    await field.waitFor();
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("access-code"); // where the buyer is headed
    await reads(page, "buy-note", `^Enter your code to buy now, or come back at ${TIME} when everyone can\\.$`);
    expect(await page.locator("#buy-button").getAttribute("aria-disabled")).toBe("true");
    await field.fill(codes[0]?.toLowerCase() as string); // typed as people type: case does not matter
    await reads(page, "buy-note", "^$");
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, "storefront-lanes", { fullPage: false });

    // A code that is not one of the sale's: refused in words, the field marked, nothing bought.
    await field.fill("ABCD-EFGH-JKMN");
    await page.getByRole("button", { name: "Buy now" }).click();
    await reads(page, "status", "^That code is not valid for you: check it as written\\.");
    expect(await field.getAttribute("aria-invalid")).toBe("true");
    expect((await api.sale(sale.id)).remaining).toBe(5);

    // The right one buys (sent as Access-Code), and the lane's one unit is taken.
    await field.fill(codes[0]?.toLowerCase() as string);
    expect(await field.getAttribute("aria-invalid")).toBeNull();
    await page.getByRole("button", { name: "Buy now" }).click();
    await reads(page, "status", "^Accepted: order \\S+ is reserved for you");
    await page.locator("#order").waitFor();
    // (the sale's read is cached for half a second)
    await expect.poll(async () => (await api.sale(sale.id)).lanes.map((l) => l.remaining)).toEqual([0, 4]);

    // The next shopper: the members' lane is sold, a later lane may have more, and ann's code is hers alone.
    const next = await (await newContext(browser(), { locale: "en-US" })).newPage();
    await next.goto(`${BASE}/?sale=${sale.id}`);
    await signIn(next, `${sale.id}-bob`);
    await reads(next, "buy-note", `^Members: this lane's units are sold\\. A later lane may have more: Fans from ${TIME}\\.$`);
    expect(await next.locator("#lane-list").textContent()).toContain("none left in this lane");
    const bob = await api.userToken(`${sale.id}-bob`);
    expect((await api.checkoutWithCode(sale.id, bob, codes[0] as string)).code).toBe("ACCESS_CODE_INVALID");
    expect(await seriousA11yViolations(next)).toEqual([]);
    for (const p of [page, next]) expect(await cspViolations(p)).toEqual([]);
  });

  it("takes the code field away at the public start: from then Buy needs no code", async () => {
    const now = Date.now();
    const sale = await api.createSale({
      name: "Almost public",
      stock: 3,
      startsAt: iso(now + 20_000),
      endsAt: iso(now + 3_600_000),
      lanes: [{ name: "early-birds", startsAt: iso(now - 1_000) }],
    });
    const page = await (await newContext(browser(), { locale: "en-US" })).newPage();
    await page.goto(`${BASE}/?sale=${sale.id}`);
    await signIn(page, `${sale.id}-cy`);
    const field = page.getByLabel("Early birds: enter your code");
    await field.waitFor();
    expect(await page.locator("#clock-label").textContent()).toBe("Everyone can buy in");
    // The public start: the field goes, no lane is marked open, and the clock runs to the end.
    await field.waitFor({ state: "hidden", timeout: 60_000 });
    await reads(page, "clock-label", "^Ends in$");
    expect(await page.locator('#lane-list [aria-current="true"]').count()).toBe(0);
    await page.locator('#buy-button[aria-disabled="false"]').waitFor();
    await page.getByRole("button", { name: "Buy now" }).click();
    await reads(page, "status", "^Accepted: order ");
    expect(await cspViolations(page)).toEqual([]);
  }, 90_000);
});

describe("a presale lane with its own line", () => {
  it("has the code holder join the lane's line with the code, lets them in at the lane's start, and sells with the lane's pass", async () => {
    const now = Date.now();
    const sale = await api.createSale({
      name: "Members' line",
      stock: 2,
      startsAt: iso(now + 30 * 60_000),
      endsAt: iso(now + 2 * 3_600_000),
      queue: { mode: "fifo", prequeueSec: 60, admitPerSec: 100, passTtlSec: 120 },
      lanes: [{ name: "members", startsAt: iso(now + 8_000), stock: 1 }],
    });
    const [code] = (await api.codeBatch(sale.id, "members", { count: 1 })).body?.codes ?? [];
    const page = await (await newContext(browser(), { locale: "en-US" })).newPage();
    await page.goto(`${BASE}/?sale=${sale.id}`);
    await page.getByRole("heading", { name: "Members' line" }).waitFor();
    await signIn(page, `${sale.id}-dee`);
    await reads(page, "queue-note", "^The code holders' line is open\\. Enter your code, then join the line");
    // Without a code the line is for code holders only; with one, the shopper joins the lane's line.
    await page.getByRole("button", { name: "Join the line" }).click();
    await reads(page, "status", "only code holders can buy or join the line");
    await page.getByLabel("Members: enter your code").fill(code as string);
    await page.getByRole("button", { name: "Join the line" }).click();
    await reads(page, "queue-note", "^(You are in line|You are next in line)", 15_000);
    // The lane's start: the shopper's turn, and Buy sends the lane's pass with the code.
    await reads(page, "queue-note", "^Your turn: buy now\\.", 60_000);
    await page.getByRole("button", { name: "Buy now" }).click();
    await reads(page, "status", "^Accepted: order ");
    await expect.poll(async () => (await api.sale(sale.id)).lanes[0]?.remaining).toBe(0);
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(await cspViolations(page)).toEqual([]);
  }, 120_000);
});

describe("the console's Lanes and codes", () => {
  it("creates a sale with lanes, makes codes shown once, copies and downloads them, revokes a batch, and counts per lane", async () => {
    const context = await newContext(browser(), { locale: "en-US", permissions: ["clipboard-read", "clipboard-write"] });
    const page = await context.newPage();
    await unlockConsole(page, "#create");
    const create = page.locator("#create-form");
    await create.getByLabel("Name", { exact: true }).fill("Lanes from the form");
    await create.getByLabel("Starts (your time)").fill(localInput(30 * 60_000));
    await create.getByLabel("Ends (your time)").fill(localInput(3 * 3_600_000));
    await create.getByLabel("Stock", { exact: true }).fill("10");

    // Lanes as rows, each refusal in words before anything is sent.
    let posted = 0;
    page.on("request", (r) => {
      if (r.method() === "POST" && new URL(r.url()).pathname === "/admin/sales") posted += 1;
    });
    const problem = async (field: string, words: string) => {
      await page.getByRole("button", { name: "Create sale" }).click();
      await page.locator("#create-status").filter({ hasText: words }).waitFor();
      expect(await create.getByLabel(field).getAttribute("aria-invalid")).toBe("true");
    };
    await page.getByRole("button", { name: "Add a lane" }).click();
    await create.getByLabel("Lane 1 name").fill("Members");
    await problem("Lane 1 name", "Lane 1: the name is 1 to 32 of a-z, 0-9 and - (such as members).");
    await create.getByLabel("Lane 1 name").fill("members");
    await problem("Lane 1 opens", "Lane 1: give the time it opens.");
    await create.getByLabel("Lane 1 opens").fill(localInput(-60_000));
    await create.getByLabel("Lane 1 units").fill("5");
    await page.getByRole("button", { name: "Add a lane" }).click();
    await create.getByLabel("Lane 2 name").fill("fans");
    await create.getByLabel("Lane 2 opens").fill(localInput(40 * 60_000));
    await problem("Lane 2 opens", "Lane 2: a lane opens before the sale's start, when everyone can buy.");
    await create.getByLabel("Lane 2 opens").fill(localInput(15 * 60_000));
    expect(posted).toBe(0);
    await page.getByRole("button", { name: "Create sale" }).click();
    const said = await page
      .locator("#create-status")
      .filter({ hasText: /^Created: sale \d+, Lanes from the form\.$/ })
      .textContent();
    const saleId = /sale (\d+)/.exec(said ?? "")?.[1] as string;
    expect((await api.sale(saleId)).lanes).toEqual([
      { name: "members", startsAt: expect.any(String), stock: 5, remaining: 5 },
      { name: "fans", startsAt: expect.any(String), stock: null, remaining: 10 },
    ]);

    // The watched sale's lanes: when each opens, its allotment and its counts.
    await page.locator("#live-lanes").getByRole("link").click();
    await page
      .locator("#watched-lanes-title")
      .filter({ hasText: `Lanes of sale ${saleId}` })
      .waitFor();
    const laneRow = (name: string) =>
      page.locator("#lane-rows tr").filter({ has: page.getByRole("cell", { name, exact: true }) });
    const cells = (name: string) => laneRow(name).locator("td").allTextContents();
    await laneRow("fans").waitFor();
    expect((await cells("members")).slice(2)).toEqual(["5", "0", "0", "0", "0"]);
    expect((await cells("fans")).slice(2)).toEqual(["no cap of its own", "0", "0", "0", "0"]);

    // A batch for the members: its codes shown once, copied, downloaded as the route's CSV.
    const makeCodes = async (lane: string, count: number, uses: number) => {
      await page.getByLabel("Lane", { exact: true }).selectOption(lane);
      await page.getByLabel("How many codes").fill(String(count));
      await page.getByLabel("Purchases per code").fill(String(uses));
      await page.getByRole("button", { name: "Make codes" }).click();
      await page
        .locator("#batch-status")
        .filter({ hasText: `Made ${count} codes for ${lane}` })
        .waitFor();
      const codes = (await page.getByRole("textbox", { name: new RegExp(`^${count} codes for ${lane}`) }).inputValue()).split(
        "\n",
      );
      expect(codes).toHaveLength(count);
      for (const code of codes) expect(code).toMatch(CODE);
      return {
        codes,
        batchId: /batch (cb_[0-9a-f]{16})/.exec((await page.locator("#batch-codes-title").textContent()) ?? "")?.[1],
      };
    };
    const first = await makeCodes("members", 3, 1);
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("batch-codes-title");
    await page.getByRole("button", { name: "Copy the codes" }).click();
    await page.locator("#batch-status").filter({ hasText: "Copied the codes." }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(first.codes.join("\n"));
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "Download CSV" }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`sale-${saleId}-members-${first.batchId}.csv`);
    expect(
      readFileSync(await download.path(), "utf8")
        .split("\r\n")
        .filter(Boolean),
    ).toEqual(["code,lane,uses,expires_at", ...first.codes.map((code) => `${code},members,1,`)]);
    await page
      .locator("#batch-status")
      .filter({ hasText: `Downloaded sale-${saleId}-members-${first.batchId}.csv.` })
      .waitFor();
    // One of them buys before its batch is revoked.
    const ann = await api.userToken(`${saleId}-ann`);
    expect((await api.checkoutWithCode(saleId, ann, first.codes[0] as string)).status).toBe(202);

    // A second batch replaces the first on the screen; hidden, neither shows again.
    const second = await makeCodes("members", 2, 2);
    expect(await page.locator("#batch-codes-list").inputValue()).not.toContain(first.codes[0]);

    // The first batch revoked after a confirmation: its codes are refused, the second's buy.
    const batches = page.locator("#batch-rows tr");
    await batches.nth(1).waitFor();
    let asked = "";
    page.once("dialog", (dialog) => {
      asked = dialog.message();
      void dialog.accept();
    });
    await page.getByRole("button", { name: `Revoke batch ${first.batchId}` }).click();
    await page
      .locator("#batch-status")
      .filter({ hasText: `Revoked batch ${first.batchId}: its codes are refused from now on.` })
      .waitFor();
    expect(asked).toBe(
      `Revoke batch ${first.batchId}? Its 3 codes are refused from now on; orders already bought with them stand.`,
    );
    await batches.filter({ hasText: first.batchId }).getByText("revoked", { exact: true }).waitFor();
    expect(await page.getByRole("button", { name: `Revoke batch ${first.batchId}` }).count()).toBe(0);
    const bob = await api.userToken(`${saleId}-bob`);
    expect((await api.checkoutWithCode(saleId, bob, first.codes[1] as string)).code).toBe("ACCESS_CODE_INVALID");
    expect((await api.checkoutWithCode(saleId, bob, second.codes[0] as string)).status).toBe(202);
    // The members' counts follow: five codes issued, two bound and spent, two units sold.
    await eventually(
      "the members' counts to show both purchases",
      async () => (await cells("members")).slice(2).join(" ") === "5 5 2 2 2",
      20_000,
    );
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.locator("#batch-rows").evaluate((rows) => rows.closest(".table-wrap")?.scrollTo(0, 0));
    await screenshot(page, "console-lanes");
    // Hidden, the codes are gone from the page.
    await page.getByRole("button", { name: "I have saved them: hide them" }).click();
    expect(await page.locator("#batch-codes").isHidden()).toBe(true);
    expect(await page.locator("#batch-codes-list").inputValue()).toBe("");
    expect(await cspViolations(page)).toEqual([]);
  });

  it("mints a staff pass on a sale with a waiting room, shows it once with Copy, logs it, and the pass buys past the line", async () => {
    const sale = await api.createSale({
      name: "Queued drop",
      stock: 5,
      startsAt: iso(Date.now() - 1_000),
      endsAt: iso(Date.now() + 3_600_000),
      queue: { mode: "fifo" },
    });
    const context = await newContext(browser(), { locale: "en-US", permissions: ["clipboard-read", "clipboard-write"] });
    const page = await context.newPage();
    await unlockConsole(page);
    await page.getByLabel("Sale number").fill(sale.id);
    await page.getByRole("button", { name: "Watch", exact: true }).click();
    await page.locator("#live-name").filter({ hasText: "Queued drop" }).waitFor();
    await openSection(page, "Lanes and codes");
    await page.locator("#lanes-absent").filter({ hasText: "This sale has no presale lanes" }).waitFor();

    await page.getByLabel("User id").fill("staff-ann");
    await page.getByRole("button", { name: "Mint a staff pass" }).click();
    await page
      .locator("#pass-status")
      .filter({ hasText: "Minted a staff pass for staff-ann: it is below, shown this once." })
      .waitFor();
    const pass = await page.getByLabel("Pass", { exact: true }).inputValue();
    expect(pass.length).toBeGreaterThan(20);
    await page.getByRole("button", { name: "Copy the pass" }).click();
    await page.locator("#pass-status").filter({ hasText: "Copied the pass." }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(pass);
    const logged = page.locator("#pass-rows tr").filter({ hasText: "staff-ann" });
    await logged.waitFor();
    expect(await logged.locator("td").last().textContent()).toBe("127.0.0.1");
    expect(await seriousA11yViolations(page)).toEqual([]);
    await page.getByRole("button", { name: "Hide it" }).click();
    expect(await page.locator("#pass-shown").isHidden()).toBe(true);

    // The pass buys past the line, once.
    const token = await api.userToken("staff-ann");
    expect((await api.checkoutWithPass(sale.id, token, undefined)).code).toBe("QUEUE_PASS_REQUIRED");
    expect((await api.checkoutWithPass(sale.id, token, pass)).status).toBe(202);
    expect(await cspViolations(page)).toEqual([]);
  });
});
