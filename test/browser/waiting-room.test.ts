// A queued sale's waiting room on the storefront, in Chromium against `npm start`: at each
// state the page says one true thing. Every visible status line is read (the sale's notice,
// the page's status, the room's line, the note beside Buy): before the line opens, open
// before the start, waiting with the wait in words and nobody let in yet, still waiting once
// the sale starts (never "you can buy now" to someone whose turn has not come), the buyer's
// turn with the time left to buy and what follows it, bought, the turn run out, sold out, over.
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { eventually } from "../../dev/lib/wait.ts";
import { api, BASE, chromiumForThisFile, cspViolations, newContext, screenshot, seriousA11yViolations } from "./browser.ts";

const browser = chromiumForThisFile();

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** The lines on the sale page that say where the buyer stands, as shown (hidden or empty ones left out). */
const STATUS_LINES = ["#sale-notice", "#status", "#queue-note", "#buy-note"];

async function visibleLines(page: Page): Promise<string[]> {
  return page.evaluate(
    (selectors) =>
      selectors
        .map((selector) => document.querySelector(selector) as HTMLElement)
        .filter((line) => line.checkVisibility() && (line.textContent ?? "").trim() !== "")
        .map((line) => (line.textContent ?? "").trim()),
    STATUS_LINES,
  );
}

/** The page's status lines, once the room's line reads `roomLine`; and none tells a buyer who may not buy yet to buy. */
async function linesWhen(page: Page, roomLine: string | RegExp, { mayBuy = false } = {}): Promise<string[]> {
  await page.locator("#queue-note").filter({ hasText: roomLine }).waitFor();
  const lines = await visibleLines(page);
  if (!mayBuy) expect(lines.filter((line) => /buy now|you can buy/i.test(line))).toEqual([]);
  expect(await page.locator("#buy-button").getAttribute("aria-disabled")).toBe(String(!mayBuy));
  return lines;
}

async function signedInPage(saleId: string, name: string): Promise<Page> {
  const page = await (await newContext(browser(), { locale: "en-US" })).newPage();
  await page.goto(`${BASE}/?sale=${saleId}`);
  await page.locator("#queue").waitFor();
  await page.getByLabel("Your name").fill(name);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByText(`Signed in as ${name}`).waitFor();
  return page;
}

const facts = async (page: Page) => ({
  place: await page.locator("#queue-place").textContent(),
  letIn: await page.locator("#queue-progress").textContent(),
  timeLeft: await page.locator("#queue-time-left").textContent(),
});

/** A sale of `stock` with a waiting room, starting `startsIn` ms from now (negative: already started). */
const queuedSale = (name: string, startsIn: number, queue: Record<string, unknown>, stock = 5) =>
  api.createSale({
    name,
    stock,
    startsAt: new Date(Date.now() + startsIn).toISOString(),
    endsAt: new Date(Date.now() + startsIn + HOUR).toISOString(),
    queue: { mode: "fifo", admitPerSec: 100, ...queue },
  });

describe("the waiting room, one state at a time", () => {
  it("before the line opens, open before the start, waiting with nobody let in yet, and still waiting once the sale starts", async () => {
    // The line opens ten minutes before a start two hours away: not yet, and Join is not offered.
    const early = await queuedSale("Line opens later", 2 * HOUR, { prequeueSec: 600 });
    const page = await signedInPage(early.id, "early-bird");
    expect(await linesWhen(page, /^The line opens in about 2 hours \(.+\)\. Come back then to join it\.$/)).toEqual([
      expect.stringMatching(/^The line opens in about 2 hours/),
      "Buy opens on your turn in the waiting room.",
    ]);
    expect(await page.getByRole("button", { name: "Join the line" }).isHidden()).toBe(true);
    expect(await seriousA11yViolations(page)).toEqual([]);

    // A random line open an hour before the start: join now, places drawn at the start.
    const drawn = await queuedSale("Drawn line", HOUR, { mode: "random", prequeueSec: 7_200 });
    await page.goto(`${BASE}/?sale=${drawn.id}`);
    expect(await linesWhen(page, "The line is open. Join the line: places are drawn when the sale starts.")).toEqual([
      "The line is open. Join the line: places are drawn when the sale starts.",
      "Buy opens on your turn in the waiting room.",
    ]);
    await page.getByRole("button", { name: "Join the line" }).click();
    expect(await linesWhen(page, /^You are in the line\. Places are drawn when the sale starts/)).toEqual([
      "You are in the line. Places are drawn when the sale starts, in about an hour. Keep this page open.",
      "Buy opens on your turn in the waiting room.",
    ]);
    expect(await facts(page)).toEqual({ place: "drawn at the start", letIn: "nobody yet", timeLeft: "–" });

    // In arrival order, five minutes before the start: a place, the wait in words, nobody let in yet.
    const soon = await queuedSale("Line before the start", 5 * MINUTE, { prequeueSec: 600 });
    await api.joinWaitingRoom(soon.id, await api.userToken(`${soon.id}-first`));
    await page.goto(`${BASE}/?sale=${soon.id}`);
    await page.getByRole("button", { name: "Join the line" }).click();
    expect(await linesWhen(page, /^You are in line: 1 person is ahead of you\./)).toEqual([
      expect.stringMatching(
        /^You are in line: 1 person is ahead of you\. Buyers are let in from the start, in about [45] minutes\. Keep this page open: Buy opens then\.$/,
      ),
      "Buy opens on your turn in the waiting room.",
    ]);
    expect(await facts(page)).toEqual({ place: "2", letIn: "nobody yet", timeLeft: "–" });
    expect(await seriousA11yViolations(page)).toEqual([]);

    // The sale starts while the buyer waits at place 2 for its one unit, which place 1 holds:
    // the page hears it open, still says the buyer's turn has not come, and that the unit will
    // most likely be gone first (place 1 may still not show: the place is kept).
    const starting = await queuedSale("Line at the start", 8_000, { prequeueSec: 600, passTtlSec: 600 }, 1);
    await api.joinWaitingRoom(starting.id, await api.userToken(`${starting.id}-first`));
    await page.goto(`${BASE}/?sale=${starting.id}`);
    await page.getByRole("button", { name: "Join the line" }).click();
    await page
      .locator("#sale-state")
      .filter({ hasText: /^live$/ })
      .waitFor({ timeout: 30_000 });
    const likelyGone =
      "You are next in line. The 1 unit left will most likely be gone before your turn; you keep your place in case some come back.";
    expect(await linesWhen(page, likelyGone)).toEqual([likelyGone, "Buy opens on your turn in the waiting room."]);
    expect(await facts(page)).toEqual({ place: "2", letIn: "place 1", timeLeft: "–" });
    expect(await cspViolations(page)).toEqual([]);
  });

  it("the buyer's turn with the time left to buy and what follows it; bought; sold out; over", async () => {
    const open = await queuedSale("Line with room", -MINUTE, { passTtlSec: 300 }, 2);
    const page = await signedInPage(open.id, "turn-taker");
    expect(await linesWhen(page, "Join the line to buy: buyers are let in a few at a time.")).toEqual([
      "Join the line to buy: buyers are let in a few at a time.",
      "Buy opens on your turn in the waiting room.",
    ]);
    await page.getByRole("button", { name: "Join the line" }).click();
    const yourTurn = "Your turn: buy now. If the time to buy runs out, your place goes to the next person in line.";
    expect(await linesWhen(page, yourTurn, { mayBuy: true })).toEqual([yourTurn]);
    expect(await facts(page)).toMatchObject({ place: "1", letIn: "place 1", timeLeft: expect.stringMatching(/^0[45]:\d\d$/) });
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, "storefront-waiting-room");

    await page.getByRole("button", { name: "Buy now" }).click();
    await page.locator("#status").filter({ hasText: "Confirmed: it is yours." }).waitFor();
    expect(await linesWhen(page, "You bought on your turn: your order is below.")).toEqual([
      "Confirmed: it is yours.",
      "You bought on your turn: your order is below.",
      "You hold an order in this sale (below).",
    ]);

    // Sold out: the last unit bought with another buyer's pass.
    const last = await queuedSale("Line sold out", -MINUTE, {}, 1);
    const other = await api.userToken(`${last.id}-other`);
    const joined = await api.joinWaitingRoom(last.id, other);
    const pass = await eventually("the other buyer's pass", async () => {
      const position = await api.pollQueue(last.id, other, joined.body?.ticket as string);
      return position.body?.pass ?? false;
    });
    expect((await api.checkoutWithPass(last.id, other, pass)).status).toBe(202);
    await page.goto(`${BASE}/?sale=${last.id}`);
    expect(await linesWhen(page, "Sold out: no unit is left for a place not yet let in.")).toEqual([
      "Sold out: no unit is left for a place not yet let in.",
      "Sold out: every unit is taken.",
    ]);
    expect(await page.getByRole("button", { name: "Join the line" }).isHidden()).toBe(true);

    // Over: the sale cancelled.
    const called = await queuedSale("Line called off", -MINUTE, {});
    expect((await api.setSaleState(called.id, "cancel")).status).toBe(200);
    await page.goto(`${BASE}/?sale=${called.id}`);
    expect(await linesWhen(page, "The sale is over: the line is closed.")).toEqual([
      expect.stringMatching(/^Cancelled: this sale will not go on/),
      "The sale is over: the line is closed.",
      "This sale was cancelled.",
    ]);
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(await cspViolations(page)).toEqual([]);
  });

  it("a hold on admission and the shop's notice reach a waiting page, and go when lifted", async () => {
    const sale = await queuedSale("Held line", -MINUTE, { passTtlSec: 300 }, 5);
    const held = "Checkout is catching up: your place is kept.";
    expect((await api.holdAdmission(sale.id, "pause", held)).status).toBe(200);
    const page = await signedInPage(sale.id, "held-buyer");
    // The sale's page carries the notice before the buyer is in line.
    await page
      .locator("#operator-notice")
      .filter({ hasText: `From the shop: ${held}` })
      .waitFor();
    await page.getByRole("button", { name: "Join the line" }).click();
    const holding = "The shop is holding the line for now: nobody is let in, and your place is kept. Keep this page open.";
    expect(await linesWhen(page, holding)).toEqual([holding, "Buy opens on your turn in the waiting room."]);
    expect(await page.locator("#operator-notice").textContent()).toBe(`From the shop: ${held}`);
    expect(await facts(page)).toEqual({ place: "1", letIn: "nobody yet", timeLeft: "–" });
    expect(await seriousA11yViolations(page)).toEqual([]);
    await screenshot(page, "storefront-waiting-room-held");

    // A new word from the shop reaches the page while it waits.
    const back = "Back in a minute: we are letting people in again shortly.";
    expect((await api.setNotice(sale.id, back)).status).toBe(200);
    await page
      .locator("#operator-notice")
      .filter({ hasText: `From the shop: ${back}` })
      .waitFor();

    // Resumed: the buyer's turn comes; the notice taken down leaves the page.
    expect((await api.holdAdmission(sale.id, "resume")).status).toBe(200);
    await linesWhen(page, /^Your turn: buy now\./, { mayBuy: true });
    expect((await api.setNotice(sale.id, null)).status).toBe(200);
    await page.locator("#operator-notice").waitFor({ state: "hidden" });
    expect(await cspViolations(page)).toEqual([]);
  });

  it("says the turn ran out, and that the place went to the next person in line", { timeout: 120_000 }, async () => {
    const sale = await queuedSale("Line that moves on", -MINUTE, { passTtlSec: 30 }, 2);
    const page = await signedInPage(sale.id, "too-slow");
    await page.getByRole("button", { name: "Join the line" }).click();
    await linesWhen(page, /^Your turn: buy now\./, { mayBuy: true });
    const passed = "Your turn has passed: your place went to the next person in line.";
    await page.locator("#queue-note").filter({ hasText: passed }).waitFor({ timeout: 90_000 });
    expect(await linesWhen(page, passed)).toEqual([passed, "Your turn to buy has passed."]);
    expect((await facts(page)).timeLeft).toBe("00:00");
  });
});
