// The console's Funnel section in Chromium against `npm start`: a sale's steps as Workers
// Analytics Engine counted them (npm start keeps the data points in its local stand-in), drawn
// as bars and a line per step with the rates between steps, and every sale's funnel beside it;
// accessible and within the page's CSP.
import { describe, expect, it } from "vitest";
import {
  api,
  chromiumForThisFile,
  cspViolations,
  newContext,
  openSection,
  screenshot,
  seriousA11yViolations,
  unlockConsole,
} from "./browser.ts";

const browser = chromiumForThisFile();

describe("the console's funnel", () => {
  it("charts a sale's funnel and its rates, and every sale's beside it", async () => {
    const sale = await api.createSale({ name: "Funnel drop", stock: 20, price: 4900, currency: "EUR", paymentWindowSec: 600 });
    const buyers = Array.from({ length: 6 }, (_, i) => `funnel-buyer-${i}`);
    const orders: { orderId: string; token: string }[] = [];
    for (const userId of buyers) {
      const token = await api.userToken(userId);
      const answer = await api.checkout(sale.id, token);
      expect(answer.status).toBe(202);
      orders.push({ orderId: answer.orderId as string, token });
    }
    // Two pay once their orders have settled (pay answers 404 until then), one cancels.
    for (const [i, { orderId, token }] of orders.slice(0, 3).entries()) {
      await expect
        .poll(
          async () =>
            (i < 2 ? await api.pay(orderId, token, "tok_visa", `funnel-${i}`) : await api.cancel(orderId, token)).status,
          {
            timeout: 30_000,
          },
        )
        .toBe(200);
    }

    const page = await (await newContext(browser(), { locale: "en-US" })).newPage();
    await unlockConsole(page);
    await page.getByLabel("Sale number").fill(sale.id);
    await page.getByRole("button", { name: "Watch", exact: true }).click();
    await page.locator("#live-name").filter({ hasText: "Funnel drop" }).waitFor();
    await openSection(page, "Funnel");
    const steps = page.locator("#funnel-rows");
    // The data points arrive as the steps happen; the section reads them every 5 s.
    await steps
      .locator("tr", { hasText: "Paid" })
      .filter({ hasText: /^Paid\s*2/ })
      .waitFor({ timeout: 30_000 });
    await steps.locator("tr", { hasText: "Cancelled" }).waitFor();
    expect(await steps.locator("tr", { hasText: "Reserved" }).locator("td").nth(1).textContent()).toBe("6");
    expect(await steps.locator("tr", { hasText: "Paid" }).locator("td").nth(3).textContent()).toBe("33% of settled");
    expect(await page.locator("#funnel-bars rect").count()).toBeGreaterThanOrEqual(4);
    expect(await page.locator("#funnel-chart polyline").count()).toBeGreaterThanOrEqual(4);
    const across = page.locator("#sales-funnel-rows tr", { hasText: sale.id });
    await across.waitFor();
    expect(await across.locator("td").last().textContent()).toBe("33%");
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(await cspViolations(page)).toEqual([]);
    await screenshot(page, "console-funnel");
  });
});
