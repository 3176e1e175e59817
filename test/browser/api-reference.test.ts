// The API reference (/docs) as a reader meets it: every operation with an example to paste
// and the answer it gets, the public API before the admin's, the lab's routes apart and marked
// internal, the contents in view wherever the reader has scrolled to; axe and the CSP content.
import { describe, expect, it } from "vitest";
import { BASE, chromiumForThisFile, cspViolations, newContext, seriousA11yViolations } from "./browser.ts";

const browser = chromiumForThisFile();

describe("the API reference", () => {
  it("shows checkout's example as a curl line with its answer, the public API first and the lab apart, its contents in view", async () => {
    const page = await (await newContext(browser(), { viewport: { width: 1280, height: 800 } })).newPage();
    await page.goto(`${BASE}/docs`);

    const checkout = page.locator("#op-postApiSalesSaleIdCheckout");
    const example = checkout.locator(".example");
    await example.getByRole("heading", { name: "Example" }).waitFor();
    const curl = await example.locator("pre").first().innerText();
    expect(curl).toContain('curl -s -X POST "$BASE/api/sales/42/checkout"');
    expect(curl).toContain('-H "Authorization: Bearer $USER_TOKEN"');
    expect(curl).toContain(`-d '{"variant":"eu-42","quantity":1}'`);
    expect(await example.innerText()).toContain("Answer 202");
    const answer = JSON.parse(await example.locator("pre").nth(1).innerText()) as { orderId: string; status: string };
    expect(answer).toMatchObject({ status: "pending", orderId: expect.stringMatching(/^\d{19,20}$/) });

    // Every operation has its example.
    const operations = await page.locator("article.operation").count();
    expect(operations).toBeGreaterThan(30);
    expect(await page.locator("article.operation .example").count()).toBe(operations);

    // The public API, then the admin's, then the lab's, each of those marked internal.
    const parts = await page.locator("main > section.part > h2").allInnerTexts();
    expect(parts).toEqual(["Public API", "Admin API", "Internal: the oversell lab"]);
    const lab = page.locator("section.internal-part article.operation");
    expect(await lab.count()).toBeGreaterThan(0);
    expect(await lab.locator(".badge.internal").count()).toBe(await lab.count());
    expect(await page.locator("section.part:not(.internal-part) .badge.internal").count()).toBe(0);

    // The contents stay in view as the reader scrolls to the end, and take them to an operation.
    const contents = page.getByRole("navigation", { name: "Contents" });
    await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
    const box = await contents.boundingBox();
    // Stuck to the top of the viewport (to the subpixel), not scrolled away with the page.
    expect(Math.abs(box?.y ?? 1_000)).toBeLessThan(1);
    await contents.getByRole("link", { name: "POST /api/sales/{saleId}/checkout" }).click();
    await expect.poll(() => page.evaluate(() => location.hash)).toBe("#op-postApiSalesSaleIdCheckout");
    const top = (await checkout.boundingBox())?.y ?? -1_000;
    expect(top).toBeGreaterThan(-1);
    expect(top).toBeLessThan(800);

    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(await cspViolations(page)).toEqual([]);
  });
});
