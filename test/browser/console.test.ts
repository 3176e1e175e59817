// The admin console in Chromium against `npm start`: unlocking with the admin token, creating
// a sale from the form, watching its figures move while a small crowd buys, and pausing,
// resuming and cancelling it (confirmed first; a cancelled sale's pause refused). The console
// is in sections (test/browser/console-sections.test.ts): each step opens the one it needs.
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
  secrets,
  seriousA11yViolations,
  unlockConsole,
} from "./browser.ts";

const browser = chromiumForThisFile();

/** Submits the console's create form as filled, starting a minute ago; the new sale's id (the console then watches it). */
async function createStartedSale(page: Page): Promise<string> {
  const startedAMinuteAgo = new Date(Date.now() - 60_000 - new Date().getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
  await page.locator("#create-form").getByLabel("Starts (your time)").fill(startedAMinuteAgo);
  await page.getByRole("button", { name: "Create sale" }).click();
  const created = await page
    .locator("#create-status")
    .filter({ hasText: /Created: sale \d+/ })
    .textContent();
  return /sale (\d+)/.exec(created ?? "")?.[1] as string;
}

describe("the admin console", () => {
  it("refuses a wrong token, creates a sale, shows its counters moving during a small crowd, pauses and cancels it", async () => {
    const page = await (await newContext(browser())).newPage();
    await page.goto(`${BASE}/admin/`);
    await page.getByLabel("Admin token").fill("not-the-token");
    await page.getByRole("button", { name: "Unlock" }).click();
    await page.getByText("That is not the admin token.").waitFor();

    await page.getByLabel("Admin token").fill(secrets.ADMIN_TOKEN);
    await page.getByRole("button", { name: "Unlock" }).click();
    await page.getByRole("navigation", { name: "Console sections" }).waitFor();
    // Kept for the tab only, never in the URL.
    expect(await page.evaluate(() => JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage } }))).toBe(
      JSON.stringify({ local: {}, session: { "flash-sale:admin-token": secrets.ADMIN_TOKEN } }),
    );
    expect(page.url()).toBe(`${BASE}/admin/`);

    await openSection(page, "Create and edit");
    const create = page.locator("#create-form");
    await create.getByLabel("Name").fill("Console drop");
    await create.getByLabel("Stock").fill("12");
    const saleId = await createStartedSale(page);
    await page.locator("#live-name").filter({ hasText: "Console drop" }).waitFor();
    expect(await page.locator("#tile-remaining").textContent()).toBe("12");
    expect(await page.locator("#tile-verdict").textContent()).toBe("reconciled");
    expect(await page.locator("#tile-health").textContent()).toBe("healthy");
    // The edit form holds the sale as loaded.
    await page.getByRole("button", { name: "Edit this sale" }).click();
    expect(await page.locator("#edit-form").getByLabel("Name").inputValue()).toBe("Console drop");
    expect(await page.locator("#edit-form").getByLabel("Stock (up only)").inputValue()).toBe("12");
    await openSection(page, "Watch");

    // A small crowd: 20 buyers for 12 units, each trying again after a 429 or 503 as the API
    // asks (a busy machine may answer either), until it is told yes or sold out.
    const buy = async (token: string) => {
      for (;;) {
        const answer = await api.checkout(saleId, token);
        if (answer.status !== 429 && answer.status !== 503) return answer;
        await new Promise((r) => setTimeout(r, Math.min(2_000, Number(answer.headers?.get("Retry-After") ?? 1) * 1_000)));
      }
    };
    const answers = await Promise.all(Array.from({ length: 20 }, async (_, i) => buy(await api.userToken(`console-crowd-${i}`))));
    expect(answers.filter((a) => a.status === 202)).toHaveLength(12);
    expect(answers.filter((a) => a.status === 409 && a.code === "SOLD_OUT")).toHaveLength(8);

    await page.locator("#tile-remaining").filter({ hasText: /^0$/ }).waitFor();
    await page.locator("#outcome-rows").getByText("OK (accepted)").waitFor();
    await page.locator("#outcome-rows").getByText("sold out (SOLD_OUT)").waitFor();
    expect(Number(await page.locator("#tile-accepted").textContent())).toBeCloseTo(1.2, 5); // 12 in the last 10 s
    expect(await page.locator("#chart polyline").count()).toBe(2);
    // Settlement moves orders from pending to awaiting payment (the sale's default window);
    // the verdict holds throughout.
    await page.locator("#state-rows tr", { hasText: "awaiting payment" }).filter({ hasText: "12" }).waitFor({ timeout: 20_000 });
    expect(await page.locator("#tile-verdict").textContent()).toBe("reconciled");
    // The sale's largest record in Redis and its share of the record limit, far from a warning.
    expect(await page.locator("#largest-key").textContent()).toMatch(
      new RegExp(
        `^Largest record in the live stock store: [\\d.]+ MiB, 0\\.\\d% of what one record may hold \\(key fs:\\{sale:${saleId}\\}:\\w+\\)\\.$`,
      ),
    );
    expect(await page.locator("#largest-key.warning").count()).toBe(0);

    // Pause: the server's answer is shown, and checkout refuses.
    await page.getByRole("button", { name: "Pause" }).click();
    await page
      .locator("#live-status")
      .filter({ hasText: `Sale ${saleId} paused: it is now paused.` })
      .waitFor();
    expect(await page.locator("#live-state").textContent()).toBe("paused");
    expect((await api.checkout(saleId, await api.userToken("console-late"))).code).toBe("SALE_PAUSED");
    await screenshot(page, "console");

    // Cancel asks first; declined, nothing is sent (so resuming still works).
    page.once("dialog", (dialog) => void dialog.dismiss());
    await page.getByRole("button", { name: "Cancel the sale" }).click();
    await page.getByRole("button", { name: "Resume" }).click();
    await page
      .locator("#live-status")
      .filter({ hasText: `Sale ${saleId} resumed: it is now sold out.` })
      .waitFor();

    // Accepted, the sale is cancelled with its orders; a cancelled sale is not paused again.
    let asked = "";
    page.once("dialog", (dialog) => {
      asked = dialog.message();
      void dialog.accept();
    });
    await page.getByRole("button", { name: "Cancel the sale" }).click();
    await page
      .locator("#live-status")
      .filter({ hasText: `Sale ${saleId} cancelled: it is now cancelled.` })
      .waitFor();
    expect(asked).toContain(`Cancel sale ${saleId}?`);
    // Sale pages are cached up to 500 ms per isolate: the public read catches up within a second.
    await expect.poll(async () => (await api.sale(saleId)).status, { timeout: 5_000 }).toBe("cancelled");
    await page.getByRole("button", { name: "Pause" }).click();
    await page
      .locator("#live-status")
      .filter({ hasText: `Sale ${saleId} was cancelled: a cancelled sale can be neither paused nor resumed.` })
      .waitFor();
    await page.locator("#state-rows tr", { hasText: "cancelled" }).filter({ hasText: "12" }).waitFor();
    // The cancelled orders' units come back on the jobs queue: the verdict follows a poll later.
    await page
      .locator("#tile-verdict")
      .filter({ hasText: /^reconciled$/ })
      .waitFor();

    expect(await cspViolations(page)).toEqual([]);
    expect(await seriousA11yViolations(page)).toEqual([]);

    // The storefront shows the cancelled sale as such, Buy disabled.
    const shop = await (await newContext(browser())).newPage();
    await shop.goto(`${BASE}/?sale=${saleId}`);
    await shop.getByRole("heading", { name: "Console drop" }).waitFor();
    expect(await shop.locator("#sale-state").textContent()).toBe("cancelled");
    expect(await shop.locator("#sale-notice").textContent()).toMatch(/^Cancelled: this sale will not go on/);
    expect(await shop.locator("#clock-label").textContent()).toBe("Cancelled");
    await shop.getByLabel("Your name").fill("too-late");
    await shop.getByRole("button", { name: "Sign in" }).click();
    await shop.locator("#buy-note").filter({ hasText: "This sale was cancelled." }).waitFor();
    expect(await shop.locator("#buy-button").getAttribute("aria-disabled")).toBe("true");
    expect(await seriousA11yViolations(shop)).toEqual([]);
  });

  it("creates a sale with a waiting room from the form and shows who joined, who was let in and the passes", async () => {
    const page = await (await newContext(browser())).newPage();
    await unlockConsole(page, "#create");
    const create = page.locator("#create-form");
    await create.getByLabel("Name").fill("Queued console drop");
    await create.getByLabel("Stock").fill("1");
    const startedAMinuteAgo = new Date(Date.now() - 60_000 - new Date().getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    await create.getByLabel("Starts (your time)").fill(startedAMinuteAgo);
    await create.getByLabel("Mode").selectOption("random");
    await create.getByLabel("Places let in per second").fill("50");
    await page.getByRole("button", { name: "Create sale" }).click();
    const created = await page
      .locator("#create-status")
      .filter({ hasText: /Created: sale \d+/ })
      .textContent();
    const saleId = /sale (\d+)/.exec(created ?? "")?.[1] as string;
    const sale = await api.sale(saleId);
    expect(sale.queue).toMatchObject({ mode: "random", admitPerSec: 50, seed: null });

    // Three join after the start (in arrival order); one unit: the first is let in.
    for (const name of ["q-1", "q-2", "q-3"]) await api.joinWaitingRoom(saleId, await api.userToken(`${saleId}-${name}`));
    const panel = page.locator("#queue-rows");
    await panel.getByRole("row", { name: "Joined 3" }).waitFor();
    await panel.getByRole("row", { name: "Let in (places 1 to) 1" }).waitFor();
    await panel.getByRole("row", { name: "Waiting 2" }).waitFor();
    await panel.getByText(sale.queue.seedCommitment as string).waitFor();
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(await cspViolations(page)).toEqual([]);
  });

  it("creates a sale in sizes from the form, shows each size's figures while it sells, and raises one size's stock", async () => {
    const page = await (await newContext(browser())).newPage();
    await unlockConsole(page, "#create");
    const create = page.locator("#create-form");
    await create.getByLabel("Name").fill("Sized console drop");
    for (const [i, values] of [
      ["eu-41", "EU 41", "2", ""],
      ["eu-42", "EU 42", "3", "15.00"],
    ].entries()) {
      await create.getByRole("button", { name: "Add a variant" }).click();
      for (const [j, part] of ["id", "label", "stock", "price"].entries()) {
        await create.getByLabel(`Variant ${i + 1} ${part}`).fill(values[j] as string);
      }
    }
    const saleId = await createStartedSale(page);
    expect((await api.sale(saleId)).variants.map((v) => [v.id, v.stock, v.price])).toEqual([
      ["eu-41", 2, 0],
      ["eu-42", 3, 1500],
    ]);
    expect((await api.checkout(saleId, await api.userToken(`${saleId}-sized`), 1, "eu-41")).status).toBe(202);
    const sizes = page.locator("#variant-rows");
    await sizes.getByRole("row", { name: "EU 41 (eu-41) 2 1 1 0" }).waitFor();
    await sizes.getByRole("row", { name: "EU 42 (eu-42) 3 3 0 0" }).waitFor();
    await page.getByRole("button", { name: "Edit this sale" }).click();
    expect(await page.locator("#edit-form").getByLabel("Stock (up only)").isDisabled()).toBe(true);

    await page.locator("#edit-form").getByLabel("Variant 1 stock").fill("4");
    await page.getByRole("button", { name: "Save changes" }).click();
    await page.locator("#edit-status").filter({ hasText: "Saved: variants changed" }).waitFor();
    await openSection(page, "Watch");
    await sizes.getByRole("row", { name: "EU 41 (eu-41) 4 3 1 0" }).waitFor();
    expect((await api.sale(saleId)).stock).toBe(7);
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(await cspViolations(page)).toEqual([]);
  });

  it("forgets the token when locked", async () => {
    const page = await (await newContext(browser())).newPage();
    await unlockConsole(page);
    await page.getByRole("button", { name: "Lock", exact: true }).click();
    await page.getByRole("button", { name: "Unlock" }).waitFor();
    expect(await page.getByLabel("Admin token").inputValue()).toBe("");
    expect(await page.locator("#console").isHidden()).toBe(true);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.reload();
    await page.getByRole("button", { name: "Unlock" }).waitFor();
    expect(await page.locator("#console").isHidden()).toBe(true);
  });

  it("creates a sale with the human check, manages deny rules, and counts a denied buyer as DENIED", async () => {
    const page = await (await newContext(browser())).newPage();
    await unlockConsole(page, "#create");

    const create = page.locator("#create-form");
    await create.getByLabel("Name").fill("Checked drop");
    await create.getByLabel("Buyers prove they are human before buying (Cloudflare Turnstile)").check();
    await page.getByRole("button", { name: "Create sale" }).click();
    const created = await page
      .locator("#create-status")
      .filter({ hasText: /Created: sale \d+/ })
      .textContent();
    const checkedId = /sale (\d+)/.exec(created ?? "")?.[1] as string;
    expect((await api.sale(checkedId)).humanCheck).toBe(true);

    await openSection(page, "Deny rules");
    const deny = page.locator("#deny-form");
    await deny.getByLabel("Kind").selectOption("user");
    await deny.getByLabel("Value").fill("console-denied");
    await deny.getByLabel("Note (optional)").fill("seen buying for a bot farm");
    await page.getByRole("button", { name: "Add rule" }).click();
    await page.locator("#deny-status").filter({ hasText: "Added: user console-denied." }).waitFor();
    await page.locator("#deny-rows").getByText("seen buying for a bot farm").waitFor();

    // The denied buyer is told the sale is sold out while a person beside it buys; the console counts it.
    const sale = await api.createSale({ name: "Denied drop", stock: 5 });
    expect((await api.checkout(sale.id, await api.userToken("console-denied"))).code).toBe("SOLD_OUT");
    expect((await api.checkout(sale.id, await api.userToken("console-person"))).status).toBe(202);
    await openSection(page, "Watch");
    await page.getByLabel("Sale number").fill(sale.id);
    await page.getByRole("button", { name: "Watch", exact: true }).click();
    await page.locator("#outcome-rows").getByText("denied (DENIED)").waitFor();

    await openSection(page, "Deny rules");
    await page.getByRole("button", { name: "Remove the rule on user console-denied" }).click();
    // Either answer ends the wait, so a refusal fails here with its own words.
    const status = page.locator("#deny-status").filter({ hasText: /Removed|Not removed/ });
    await status.waitFor();
    expect(await status.textContent()).toBe("Removed the rule on user console-denied.");
    expect(await page.locator("#deny-rows").getByText("console-denied").count()).toBe(0);
    expect(await cspViolations(page)).toEqual([]);
  });
});
