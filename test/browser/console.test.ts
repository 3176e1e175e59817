// The admin console in Chromium against `npm start`: unlocking with the admin token, creating
// a sale from the form, and watching its figures move while a small crowd buys.
import { Redis } from "ioredis";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Answer } from "../../dev/lib/api-client.ts";
import { saleStatsKey } from "../../src/shared/keys.ts";
import {
  api,
  BASE,
  cspViolations,
  launchChromium,
  newContext,
  screenshot,
  secrets,
  seriousA11yViolations,
  stack,
} from "./browser.ts";

let browser: Browser;
let redis: Redis;
beforeAll(async () => {
  browser = await launchChromium();
  redis = new Redis({ port: stack.REDIS_PORT, host: "127.0.0.1", password: secrets.REDIS_PASSWORD, lazyConnect: true });
});
afterAll(async () => {
  await browser?.close();
  redis?.disconnect();
});

describe("the admin console", () => {
  it("refuses a wrong token, creates a sale and shows its counters moving during a small crowd", async () => {
    const page = await (await newContext(browser)).newPage();
    await page.goto(`${BASE}/admin/`);
    await page.getByLabel("Admin token").fill("not-the-token");
    await page.getByRole("button", { name: "Unlock" }).click();
    await page.getByText("That is not the admin token.").waitFor();

    await page.getByLabel("Admin token").fill(secrets.ADMIN_TOKEN);
    await page.getByRole("button", { name: "Unlock" }).click();
    await page.getByRole("heading", { name: "Create a sale" }).waitFor();
    expect(await page.evaluate(() => JSON.stringify({ ...localStorage, ...sessionStorage }))).toBe("{}");

    await page.getByLabel("Name").fill("Console drop");
    await page.getByLabel("Stock").fill("12");
    const startedAMinuteAgo = new Date(Date.now() - 60_000 - new Date().getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    await page.getByLabel("Starts (your time)").fill(startedAMinuteAgo);
    await page.getByRole("button", { name: "Create sale" }).click();
    const created = await page
      .locator("#create-status")
      .filter({ hasText: /Created: sale \d+/ })
      .textContent();
    const saleId = /sale (\d+)/.exec(created ?? "")?.[1] as string;
    await page.locator("#live-name").filter({ hasText: "Console drop" }).waitFor();
    expect(await page.locator("#tile-remaining").textContent()).toBe("12");
    expect(await page.locator("#tile-verdict").textContent()).toBe("reconciled");

    // A small crowd: 20 buyers for 12 units.
    const answers = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => api.checkout(saleId, await api.userToken(`console-crowd-${i}`))),
    );
    expect(answers.filter((a) => a.status === 202)).toHaveLength(12);

    await page.locator("#tile-remaining").filter({ hasText: /^0$/ }).waitFor();
    await page.locator("#outcome-rows").getByText("OK (accepted)").waitFor();
    await page.locator("#outcome-rows").getByText("SOLD_OUT").waitFor();
    expect(Number(await page.locator("#tile-accepted").textContent())).toBeCloseTo(1.2, 5); // 12 in the last 10 s
    expect(await page.locator("#chart polyline").count()).toBe(2);
    // Settlement moves orders from pending to awaiting payment (the sale's default window);
    // the verdict holds throughout.
    await page.locator("#state-rows tr", { hasText: "awaiting payment" }).filter({ hasText: "12" }).waitFor({ timeout: 20_000 });
    expect(await page.locator("#tile-verdict").textContent()).toBe("reconciled");
    await screenshot(page, "console");

    // Operations this server does not have yet say so.
    await page.getByRole("button", { name: "Pause" }).click();
    await page.locator("#live-status").filter({ hasText: /pause/ }).waitFor();

    expect(await cspViolations(page)).toEqual([]);
    expect(await seriousA11yViolations(page)).toEqual([]);
  });

  it("forgets the token when locked", async () => {
    const page = await (await newContext(browser)).newPage();
    await page.goto(`${BASE}/admin/`);
    await page.getByLabel("Admin token").fill(secrets.ADMIN_TOKEN);
    await page.getByRole("button", { name: "Unlock" }).click();
    await page.getByRole("button", { name: "Lock", exact: true }).click();
    await page.getByRole("button", { name: "Unlock" }).waitFor();
    expect(await page.getByLabel("Admin token").inputValue()).toBe("");
    expect(await page.locator("#console").isHidden()).toBe(true);
  });
});
