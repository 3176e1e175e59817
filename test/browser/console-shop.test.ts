// The console's side for the shop, in Chromium against `npm start`: an endpoint for order
// events added from the form (its secret shown once), a receiver (an HTTP server in this
// process, verifying each Standard Webhooks signature) that fails and then answers, the
// failure seen and replayed from the console, the endpoint disabled (events wait) and enabled
// (they arrive), its events changed and its secret rotated; and a sale's orders listed,
// filtered, paged, opened with their history, and exported as CSV.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Page } from "playwright-core";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { eventually } from "../../dev/lib/wait.ts";
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

interface Receipt {
  id: string;
  type: string;
  orderId: string | undefined;
  verified: boolean;
  answered: number;
}

/** Whether the request's Standard Webhooks signature is by `secret` (and fresh). */
function verifies(secret: string, payload: string, headers: Record<string, string>): boolean {
  try {
    new Webhook(secret).verify(payload, headers);
    return true;
  } catch {
    return false;
  }
}

/**
 * The shop's backend: answers 500 while `failing`, else 204 to a request whose signature
 * verifies with `secret` (400 to one that does not); records every request it was sent.
 */
async function startReceiver() {
  const state = { failing: true, secret: "", receipts: [] as Receipt[] };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const payload = Buffer.concat(chunks).toString("utf8");
    const verified = verifies(state.secret, payload, req.headers as Record<string, string>);
    const body = JSON.parse(payload) as { id: string; type: string; data: { order?: { orderId: string } } };
    const answered = state.failing ? 500 : verified ? 204 : 400;
    state.receipts.push({ id: body.id, type: body.type, orderId: body.data.order?.orderId, verified, answered });
    res.writeHead(answered).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`;
  return { state, url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** A buyer's order of `saleId`, once settlement has put it in D1 awaiting payment. */
async function settledOrder(saleId: string, buyer: string) {
  const token = await api.userToken(buyer);
  const accepted = await api.checkout(saleId, token);
  expect(accepted.status).toBe(202);
  const orderId = accepted.orderId as string;
  await eventually(
    `order ${orderId} to await payment`,
    async () => (await api.order(orderId, token)).body?.status === "awaiting_payment",
    30_000,
  );
  return { orderId, token };
}

/** The deliveries table's row for one event of one order. */
const deliveryRow = (page: Page, type: string, orderId: string) =>
  page.locator("#delivery-rows tr", { hasText: `order ${orderId}` }).filter({ hasText: type });

/** A delivery row as "<delivery>|<attempts>|<last answer>", read from its cells as shown. */
async function deliveryState(page: Page, type: string, orderId: string): Promise<string> {
  const row = deliveryRow(page, type, orderId);
  if ((await row.count()) !== 1) return "";
  const cells = await row.locator("td").allInnerTexts();
  return [cells[2], Number.parseInt(cells[3] as string, 10), cells[4]].map((c) => String(c).trim()).join("|");
}

/** Presses "Refresh the deliveries" until the row of `type` for `orderId` reads `state` (as deliveryState). */
async function refreshUntil(page: Page, type: string, orderId: string, state: string | RegExp) {
  await expect
    .poll(
      async () => {
        await page.getByRole("button", { name: "Refresh the deliveries" }).click();
        return deliveryState(page, type, orderId);
      },
      { timeout: 45_000, interval: 500 },
    )
    .toMatch(state);
}

const secretShown = (page: Page) => page.getByLabel("Secret", { exact: true }).inputValue();

describe("the console's order events", () => {
  it("adds an endpoint (secret shown once), sees a failed delivery and replays it, disables and enables it, changes its events, rotates its secret", async () => {
    const receiver = await startReceiver();
    const page = await (await newContext(browser())).newPage();
    let endpointId: string | undefined;
    try {
      await unlockConsole(page, "#events");
      const form = page.locator("#endpoint-form");
      await form.getByLabel("Endpoint URL (https)").fill(receiver.url);
      await form.getByLabel("Description (optional)").fill("the shop's fulfilment");
      for (const type of ["order.expired", "order.failed", "order.refund_due", "sale.sold_out", "sale.ended"])
        await form.getByLabel(type, { exact: true }).uncheck();
      await page.getByRole("button", { name: "Add endpoint" }).click();
      await page
        .locator("#endpoints-status")
        .filter({ hasText: `Added: ${receiver.url}.` })
        .waitFor();

      // The secret: shown once, focused for the keyboard, gone once hidden; the list never has it.
      const secret = await secretShown(page);
      expect(secret).toMatch(/^whsec_/);
      expect(await page.evaluate(() => document.activeElement?.id)).toBe("secret-title");
      receiver.state.secret = secret;
      const listed = (await api.endpoints()).find((e) => e.url === receiver.url);
      endpointId = listed?.id;
      expect(listed).toMatchObject({
        description: "the shop's fulfilment",
        enabled: true,
        events: ["order.reserved", "order.awaiting_payment", "order.paid", "order.cancelled"],
      });
      expect(listed?.secret).toBeUndefined();
      await page.getByRole("button", { name: "I have saved it: hide it" }).click();
      expect(await page.locator("#endpoint-secret").isHidden()).toBe(true);
      expect(await secretShown(page)).toBe("");
      const endpointRow = page.locator("#endpoint-rows tr", { hasText: receiver.url });
      expect(await endpointRow.textContent()).toContain("order.reserved, order.awaiting_payment, order.paid, order.cancelled");

      // The shop answers 500: the console shows the delivery waiting with that answer, and the next event behind it.
      const sale = await api.createSale({ name: "Events drop", stock: 5, price: 1500, currency: "EUR", paymentWindowSec: 600 });
      const first = await settledOrder(sale.id, `${sale.id}-events-1`);
      await page.getByRole("button", { name: `Open the endpoint ${receiver.url}` }).click();
      await page.getByRole("heading", { name: `Endpoint ${receiver.url}` }).waitFor();
      await refreshUntil(page, "order.reserved", first.orderId, /^pending\|\d+\|500$/);
      expect(await deliveryState(page, "order.awaiting_payment", first.orderId)).toBe("pending|0|–");

      // The shop is back; Replay sends it now with its webhook-id, and the one behind it follows.
      receiver.state.failing = false;
      await page.getByRole("button", { name: `Replay order.reserved of order ${first.orderId}` }).click();
      await page
        .locator("#endpoint-status")
        .filter({ hasText: `Sent again: order.reserved of order ${first.orderId}, with the same webhook-id.` })
        .waitFor();
      await refreshUntil(page, "order.awaiting_payment", first.orderId, "delivered|1|204");
      await refreshUntil(page, "order.reserved", first.orderId, /^delivered\|\d+\|204$/);
      const ofFirst = receiver.state.receipts.filter((r) => r.orderId === first.orderId);
      expect(new Set(ofFirst.filter((r) => r.type === "order.reserved").map((r) => r.id)).size).toBe(1);
      expect(ofFirst.filter((r) => r.answered === 204).map((r) => r.type)).toEqual(["order.reserved", "order.awaiting_payment"]);
      expect(ofFirst.every((r) => r.verified)).toBe(true);

      // Disabled, it is sent nothing: a delivery replayed meanwhile waits, and goes once it is enabled again.
      await page.getByRole("button", { name: "Disable" }).click();
      await page
        .locator("#endpoint-status")
        .filter({ hasText: "Disabled: it is sent no new events; deliveries still pending wait until it is enabled again." })
        .waitFor();
      await endpointRow.getByText("disabled").waitFor();
      await page.getByRole("button", { name: `Replay order.awaiting_payment of order ${first.orderId}` }).click();
      await page
        .locator("#endpoint-status")
        .filter({
          hasText: `To be sent again once the endpoint is enabled: order.awaiting_payment of order ${first.orderId}, with the same webhook-id.`,
        })
        .waitFor();
      await refreshUntil(page, "order.awaiting_payment", first.orderId, "pending|1|204");
      await page.getByRole("button", { name: "Enable" }).click();
      await page.locator("#endpoint-status").filter({ hasText: "Enabled: new events are sent to it" }).waitFor();
      await refreshUntil(page, "order.awaiting_payment", first.orderId, "delivered|2|204");
      // Enabled, the order's payment is heard of.
      expect((await api.pay(first.orderId, first.token, "tok_visa", `${sale.id}-pay`)).status).toBe(200);
      await refreshUntil(page, "order.paid", first.orderId, "delivered|1|204");
      const heard = receiver.state.receipts.filter((r) => r.orderId === first.orderId && r.answered === 204);
      expect(heard.map((r) => r.type)).toEqual([
        "order.reserved",
        "order.awaiting_payment",
        "order.awaiting_payment",
        "order.paid",
      ]);
      expect(heard[1]?.id).toBe(heard[2]?.id);

      // Its URL and its events changed from the form, each only when it differs.
      const movedUrl = `${receiver.url}?moved=1`;
      await page.getByRole("button", { name: "Save changes" }).click();
      await page.locator("#endpoint-status").filter({ hasText: "Nothing to save: nothing changed." }).waitFor();
      await page.locator("#endpoint-edit-form").getByLabel("URL", { exact: true }).fill(movedUrl);
      await page.getByRole("button", { name: "Save changes" }).click();
      await page
        .locator("#endpoint-status")
        .filter({ hasText: `Saved: it is sent to ${movedUrl}.` })
        .waitFor();
      await page.getByRole("heading", { name: `Endpoint ${movedUrl}` }).waitFor();
      await page.locator("#endpoint-edit-events").getByLabel("order.paid", { exact: true }).uncheck();
      await page.getByRole("button", { name: "Save changes" }).click();
      await page
        .locator("#endpoint-status")
        .filter({ hasText: "Saved: it receives order.reserved, order.awaiting_payment, order.cancelled." })
        .waitFor();
      expect((await api.endpoints()).find((e) => e.id === endpointId)).toMatchObject({ url: movedUrl });
      expect((await api.endpoints()).find((e) => e.id === endpointId)?.events).toEqual([
        "order.reserved",
        "order.awaiting_payment",
        "order.cancelled",
      ]);

      // Rotated (asked first): a new secret, shown once, signs the next order's events.
      let asked = "";
      page.once("dialog", (dialog) => {
        asked = dialog.message();
        void dialog.accept();
      });
      await page.getByRole("button", { name: "Rotate the secret" }).click();
      await page.locator("#endpoint-status").filter({ hasText: "Rotated: deliveries carry both signatures until" }).waitFor();
      expect(asked).toContain(`Rotate the secret of ${movedUrl}?`);
      const rotated = await secretShown(page);
      expect(rotated).toMatch(/^whsec_/);
      expect(rotated).not.toBe(secret);
      receiver.state.secret = rotated;
      const second = await settledOrder(sale.id, `${sale.id}-events-2`);
      await eventually(
        `order ${second.orderId}'s events, signed with the new secret`,
        async () => receiver.state.receipts.some((r) => r.orderId === second.orderId && r.type === "order.awaiting_payment"),
        30_000,
      );
      expect(receiver.state.receipts.filter((r) => r.orderId === second.orderId).every((r) => r.verified)).toBe(true);

      await page.locator("#endpoint").scrollIntoViewIfNeeded();
      await page.locator("#deliveries-title").evaluate((h) => h.scrollIntoView({ block: "center" }));
      await screenshot(page, "console-order-events", { fullPage: false });

      // Each attempt at the first event, opened from its count: the 500s before the replay, then the 204.
      const reserved = deliveryRow(page, "order.reserved", first.orderId);
      await reserved.locator("summary").click();
      const answers = (await reserved.locator("ol.attempts li").allTextContents()).map((t) => t.split(": ").at(-1));
      expect(answers.at(-1)).toBe("answered 204");
      expect(answers.slice(0, -1).length).toBeGreaterThan(0);
      expect(new Set(answers.slice(0, -1))).toEqual(new Set(["answered 500"]));

      // The order's page in the console names what was sent about it, to which endpoint.
      await openSection(page, "Watch");
      await page.getByLabel("Sale number").fill(sale.id);
      await page.getByRole("button", { name: "Watch", exact: true }).click();
      await openSection(page, "Orders");
      const { reference } = (await api.orderDetail(first.orderId)).body as { reference: string };
      await page.getByRole("button", { name: `Details of order ${reference}` }).click();
      await page.getByRole("heading", { name: `Order ${reference}` }).waitFor();
      const sent = await page
        .locator("#sent-rows tr", { hasText: endpointId as string })
        .evaluateAll((trs) =>
          trs.map((tr) =>
            Array.from(tr.querySelectorAll("td")).map((td, i) =>
              i === 3 ? td.querySelector("summary")?.firstChild?.textContent : td.textContent,
            ),
          ),
        );
      expect(sent).toEqual([
        ["order.reserved", endpointId, "delivered", expect.stringMatching(/^\d+$/)],
        ["order.awaiting_payment", endpointId, "delivered", "2"],
        ["order.paid", endpointId, "delivered", "1"],
      ]);

      expect(await seriousA11yViolations(page)).toEqual([]);
      expect(await cspViolations(page)).toEqual([]);

      // Locking forgets the secret shown.
      await page.getByRole("button", { name: "Lock", exact: true }).click();
      expect(await secretShown(page)).toBe("");
    } finally {
      // Other tests' sales raise events too: this endpoint stops hearing of them.
      if (endpointId) await api.updateEndpoint(endpointId, { enabled: false });
      await receiver.close();
    }
  });
});

describe("the console's orders of a sale", () => {
  it("lists them newest first a page at a time, filters by state, opens one with its history, and exports them as CSV", async () => {
    const sale = await api.createSale({ name: "Orders drop", stock: 60, price: 900, currency: "USD", paymentWindowSec: 600 });
    const buyers = Array.from({ length: 52 }, (_, i) => `${sale.id}-orders-${i}`);
    const tokens = await Promise.all(buyers.map((b) => api.userToken(b)));
    const accepted = await Promise.all(tokens.map((t) => api.checkout(sale.id, t)));
    // Any other answer is named in the failure (status and code), not only counted.
    expect(accepted.filter((a) => a.status !== 202)).toEqual([]);
    await eventually(
      "the 52 orders in D1",
      async () => (await api.saleOrders(sale.id, { status: "awaiting_payment", limit: 200 })).orders.length === 52,
      30_000,
    );
    const paid = accepted[3]?.orderId as string;
    const cancelled = accepted[7]?.orderId as string;
    expect((await api.pay(paid, tokens[3] as string, "tok_visa", `${sale.id}-pay`)).status).toBe(200);
    expect((await api.cancel(cancelled, tokens[7] as string)).status).toBe(200);
    const listed = (await api.saleOrders(sale.id, { limit: 200 })).orders;
    const everyOrder = listed.map((o) => o.orderId);
    const referenceOf = (orderId: string) => listed.find((o) => o.orderId === orderId)?.reference as string;

    const page = await (await newContext(browser())).newPage();
    await unlockConsole(page);
    await page.getByLabel("Sale number").fill(sale.id);
    await page.getByRole("button", { name: "Watch", exact: true }).click();
    await openSection(page, "Orders");
    await page.getByRole("heading", { name: `Orders of sale ${sale.id}` }).waitFor();
    const rows = page.locator("#order-rows tr[data-order]");
    const shownIds = () => rows.evaluateAll((trs) => trs.map((tr) => (tr as HTMLElement).dataset.order));

    // The first page, newest first, as the API lists them; More orders adds the rest and takes the focus there.
    await page.locator("#orders-status").filter({ hasText: "50 orders shown, newest first; more below." }).waitFor();
    expect(await shownIds()).toEqual(everyOrder.slice(0, 50));
    await page.getByRole("button", { name: "More orders" }).click();
    await page.locator("#orders-status").filter({ hasText: "52 orders shown, newest first." }).waitFor();
    expect(await shownIds()).toEqual(everyOrder);
    expect(await page.locator("#more-orders").isHidden()).toBe(true);
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe(
      `Details of order ${referenceOf(everyOrder[50] as string)}`,
    );
    // A row names the order by its reference, with its id beside it.
    expect(await rows.filter({ hasText: paid }).textContent()).toContain("$9.00");
    expect(await rows.filter({ hasText: paid }).textContent()).toContain(referenceOf(paid));

    // Filtered by state.
    await page.getByLabel("State", { exact: true }).selectOption("paid");
    await page.getByRole("button", { name: "Show orders" }).click();
    await page.locator("#orders-status").filter({ hasText: "1 paid order shown, newest first." }).waitFor();
    expect(await shownIds()).toEqual([paid]);

    // One order: its facts, its state changes in order, its payment attempt; the focus on its heading.
    await page.getByRole("button", { name: `Details of order ${referenceOf(paid)}` }).click();
    await page.getByRole("heading", { name: `Order ${referenceOf(paid)}` }).waitFor();
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("order-detail-title");
    expect(await page.locator("#detail-facts").textContent()).toContain("Statepaid");
    expect(await page.locator("#detail-facts").textContent()).toContain(`Order id${paid}`);
    expect(await page.locator("#detail-facts").textContent()).toContain("ProductOrders drop");
    // The request's trace, kept with the settled order.
    expect(await page.locator("#detail-facts").textContent()).toMatch(/Trace \(traceparent\)00-[0-9a-f]{32}-[0-9a-f]{16}-01/);
    expect(await page.locator("#history-rows tr td:nth-child(2)").allTextContents()).toEqual([
      "order.reserved",
      "order.awaiting_payment",
      "order.paid",
    ]);
    expect(await page.locator("#payment-rows").textContent()).toContain("succeeded");
    await page.locator("#sale-orders-title").evaluate((h) => h.scrollIntoView({ block: "start" }));
    await screenshot(page, "console-orders", { fullPage: false });
    await page.getByRole("button", { name: "Close the order" }).click();
    expect(await page.locator("#order-detail").isHidden()).toBe(true);

    // Found by its reference as a buyer reads it out (any case, O for 0 and L for 1 forgiven), or by its id.
    const spoken = referenceOf(cancelled).toLowerCase().replaceAll("0", "o").replaceAll("1", "l");
    await page.getByLabel("Find an order").fill(spoken);
    await page.getByRole("button", { name: "Find", exact: true }).click();
    await page.getByRole("heading", { name: `Order ${referenceOf(cancelled)}` }).waitFor();
    expect(await page.locator("#detail-facts").textContent()).toContain("Statecancelled");
    await page.getByLabel("Find an order").fill("ZZZZ-ZZZZ");
    await page.getByRole("button", { name: "Find", exact: true }).click();
    await page.locator("#find-status").filter({ hasText: "has the reference ZZZZ-ZZZZ" }).waitFor();
    await page.getByRole("button", { name: "Close the order" }).click();

    // The export: the same orders as the list, in its order, for every state and for one.
    await page.getByLabel("State", { exact: true }).selectOption("");
    const [all] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download CSV" }).click()]);
    expect(all.suggestedFilename()).toBe(`sale-${sale.id}-orders.csv`);
    const lines = readFileSync(await all.path(), "utf8")
      .split("\r\n")
      .filter(Boolean);
    expect(lines[0]).toBe(
      "orderId,reference,saleId,saleName,userId,status,quantity,variant,variantLabel,amount,currency,createdAt,closedAt,refundDue",
    );
    expect(lines.slice(1).map((l) => l.split(",")[0])).toEqual(everyOrder);
    await page
      .locator("#export-status")
      .filter({ hasText: `Downloaded sale-${sale.id}-orders.csv.` })
      .waitFor();
    await page.getByLabel("State", { exact: true }).selectOption("cancelled");
    const [some] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download CSV" }).click()]);
    const cancelledLines = readFileSync(await some.path(), "utf8")
      .split("\r\n")
      .filter(Boolean);
    expect(cancelledLines.slice(1).map((l) => l.split(","))).toEqual([
      [
        cancelled,
        referenceOf(cancelled),
        sale.id,
        "Orders drop",
        buyers[7],
        "cancelled",
        "1",
        "default",
        "",
        "9.00",
        "USD",
        expect.any(String),
        expect.any(String),
        "false",
      ],
    ]);

    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(await cspViolations(page)).toEqual([]);
  });
});
