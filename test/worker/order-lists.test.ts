// The order lists through the real routes and D1: a sale's orders (page by page and as a
// streamed CSV), one order with its history, and a buyer's own orders. Large sales are
// written straight into D1 (checkout would take minutes for 20,000 orders); the triggers
// that guard stock and the per-buyer limit still run on every row.
import { env } from "cloudflare:test";
import Papa from "papaparse";
import { describe, expect, it } from "vitest";
import { EXPORT_PAGE_SIZE, inCurrencyUnits } from "../../src/orders/order-lists";
import type { AdminOrderView } from "../../src/shared/api-types";
import { api, createSale, internalId, loopbackApi, waitForConfirmed } from "./helpers";

/** `count` orders of a sale, one per buyer (`<prefix>-<i>`) unless told, a millisecond apart, every third paid unless told. */
async function insertOrders(
  saleId: string,
  count: number,
  prefix: string,
  { userOf = (i: number) => `${prefix}-${i}`, somePaid = true } = {},
) {
  const users = JSON.stringify(Array.from({ length: count }, (_, i) => userOf(i + 1)));
  await env.DB.prepare(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?2)
     INSERT INTO orders (order_id, sale_id, user_id, quantity, amount, currency, status, created_at, settled_at, closed_at)
     SELECT printf('9%09d%07d', ?1 % 1000000000, i), ?1, json_extract(?3, '$[' || (i - 1) || ']'), 1, 100, 'USD',
            CASE WHEN i % 3 = 0 AND ?4 THEN 'paid' ELSE 'expired' END, 1700000000000 + i, 1700000000000 + i, 1700000000000 + i
     FROM n`,
  )
    .bind(Number(saleId), count, users, Number(somePaid))
    .run();
}

async function everyPage(saleId: string, status?: string): Promise<AdminOrderView[]> {
  const all: AdminOrderView[] = [];
  let cursor: string | undefined;
  do {
    const page = await api.saleOrders(saleId, { status, cursor, limit: 200 });
    all.push(...page.orders);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return all;
}

/**
 * User ids that try to run a formula in a spreadsheet (OWASP's CSV injection payloads), at the
 * start of the cell and after a separator of either locale inside it.
 */
const CSV_INJECTIONS = [
  "=1+1",
  "+1+1",
  "-1+1",
  "@SUM(1+1)",
  "\t=1+1",
  "\r=1+1",
  '=HYPERLINK("https://evil.example")',
  "=cmd|' /C calc'!A0",
  "x;=1+1;",
  "x,=1+1,",
  "a; =1+1",
  "a,\t@SUM(1)",
  "a;;-2",
  "a\n=1+1",
  "a\r\n+1",
  'a,"b";=c',
  "plain-user",
];

/** Reads a CSV response chunk by chunk: its lines, and how many lines each chunk carried. */
async function readCsv(res: Response): Promise<{ lines: string[]; linesPerChunk: number[] }> {
  const reader = (res.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  const linesPerChunk: number[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    linesPerChunk.push(value.split("\r\n").length - 1);
    text += value;
  }
  return { lines: text.split("\r\n").filter((l) => l !== ""), linesPerChunk };
}

describe("a sale's orders", () => {
  it("exports 20,000 orders as CSV, a page at a time, the same as the list", async () => {
    const sale = await createSale({ stock: 20_000 });
    await insertOrders(sale.id, 20_000, `bulk${sale.id}`);

    const listed = await everyPage(sale.id);
    expect(listed).toHaveLength(20_000);
    expect(listed[0]?.userId).toBe(`bulk${sale.id}-20000`); // newest first
    expect(new Set(listed.map((o) => o.orderId)).size).toBe(20_000);

    const res = await api.saleOrdersCsv(sale.id);
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/^text\/csv/);
    const { lines, linesPerChunk } = await readCsv(res);
    expect(lines[0]).toBe(
      "orderId,reference,saleId,saleName,userId,status,quantity,variant,variantLabel,amount,currency,createdAt,closedAt,refundDue",
    );
    expect(lines.slice(1).map((l) => l.split(",")[0])).toEqual(listed.map((o) => o.orderId));
    expect(lines[1]).toBe(
      [
        listed[0]?.orderId,
        listed[0]?.reference,
        sale.id,
        sale.name,
        listed[0]?.userId,
        "expired",
        1,
        "default",
        "", // no variants: no label
        "1.00", // 100 cents, in dollars
        "USD",
        listed[0]?.createdAt,
        listed[0]?.closedAt,
        false,
      ].join(","),
    );
    // Streamed: never more than one page of rows read and sent at once.
    expect(Math.max(...linesPerChunk)).toBeLessThanOrEqual(EXPORT_PAGE_SIZE);
    expect(linesPerChunk.length).toBeGreaterThanOrEqual(20_000 / EXPORT_PAGE_SIZE);

    const paid = await everyPage(sale.id, "paid");
    expect(paid).toHaveLength(6666);
    expect(paid.every((o) => o.status === "paid")).toBe(true);
    const paidCsv = await readCsv(await api.saleOrdersCsv(sale.id, "paid"));
    expect(paidCsv.lines.slice(1).map((l) => l.split(",")[0])).toEqual(paid.map((o) => o.orderId));
  });

  it("writes no cell a spreadsheet would run as a formula, read with `,` or `;`, quoted or split naively", async () => {
    const sale = await createSale({ stock: CSV_INJECTIONS.length });
    await insertOrders(sale.id, CSV_INJECTIONS.length, "x", { userOf: (i) => CSV_INJECTIONS[i - 1] as string });
    const text = await (await api.saleOrdersCsv(sale.id)).text();

    const readings = {
      comma: Papa.parse<string[]>(text, { delimiter: ",", newline: "\r\n" }).data.flat(),
      semicolon: Papa.parse<string[]>(text, { delimiter: ";", newline: "\r\n" }).data.flat(),
      naive: text.split(/[,;\t\r\n]/),
    };
    for (const [how, cells] of Object.entries(readings)) {
      const formulas = cells.filter((cell) => /^ *[=+\-@\t\r]/.test(cell));
      expect(formulas, `read ${how}`).toEqual([]);
    }
    // Read as a `,` locale reads it, every user id is whole, with a quote mark before each formula character.
    const rows = Papa.parse<string[]>(text, { delimiter: ",", newline: "\r\n", skipEmptyLines: true }).data;
    const column = rows[0]?.indexOf("userId") as number;
    const exported = rows.slice(1).map((row) => row[column] as string);
    expect(exported.map((id) => id.replaceAll(/'(?=[=+\-@\t\r])/g, "")).sort()).toEqual([...CSV_INJECTIONS].sort());
    expect(exported).toContain("x;'=1+1;");
  });

  it("gives amounts in the currency's own units, exactly, as many decimals as the currency has", () => {
    expect(inCurrencyUnits(4900, "EUR")).toBe("49.00");
    expect(inCurrencyUnits(5, "USD")).toBe("0.05");
    expect(inCurrencyUnits(4900, "JPY")).toBe("4900");
    expect(inCurrencyUnits(4900, "KWD")).toBe("4.900");
    expect(inCurrencyUnits(999_999_999_999_99, "EUR")).toBe("999999999999.99");
  });

  it("refuses a bad status, limit or cursor, an unknown sale, and callers without the admin token", async () => {
    const sale = await createSale({ stock: 5 });
    const get = (path: string, headers: Record<string, string> = { Authorization: `Bearer ${env.ADMIN_TOKEN}` }) =>
      api.fetch(path, { headers });
    expect((await get(`/admin/sales/${sale.id}/orders?status=pending`)).status).toBe(400);
    expect((await get(`/admin/sales/${sale.id}/orders?limit=0`)).status).toBe(400);
    expect((await get(`/admin/sales/${sale.id}/orders?limit=201`)).status).toBe(400);
    expect((await get(`/admin/sales/${sale.id}/orders?cursor=abc`)).status).toBe(400);
    expect((await get("/admin/sales/987654321987/orders")).status).toBe(404);
    expect((await get("/admin/sales/987654321987/orders.csv")).status).toBe(404);
    expect((await get(`/admin/sales/${sale.id}/orders`, {})).status).toBe(401);
    expect((await get(`/admin/sales/${sale.id}/orders.csv`, {})).status).toBe(401);
    expect((await get("/admin/orders/1234", {})).status).toBe(401);
    expect((await get("/admin/orders/1234")).status).toBe(404);
  });

  it("shows one order with its history, payments and deliveries", async () => {
    const sale = await createSale({ stock: 5, price: 700, paymentWindowSec: 600 });
    const token = await api.userToken("detail-buyer");
    const { orderId } = (await api.checkout(sale.id, token)) as { orderId: string };
    await waitForConfirmed([orderId]);
    expect((await loopbackApi.pay(orderId, token, "tok_visa", "detail-key")).status).toBe(200);

    const detail = await api.orderDetail(orderId);
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({ orderId, status: "paid", amount: 700, closedAt: expect.any(String), deliveries: [] });
    expect(detail.body?.history.map((h) => h.type)).toEqual(["order.reserved", "order.awaiting_payment", "order.paid"]);
    expect(detail.body?.payments).toEqual([expect.objectContaining({ status: "succeeded", declineReason: null })]);
  });
});

describe("a buyer's orders", () => {
  it("lists only the caller's orders, across sales, newest first", async () => {
    const [first, second] = [await createSale({ stock: 5 }), await createSale({ stock: 5 })];
    const [ann, bob] = [await api.userToken("lists-ann"), await api.userToken("lists-bob")];
    const a1 = (await api.checkout(first.id, ann)).orderId as string;
    const b1 = (await api.checkout(first.id, bob)).orderId as string;
    const a2 = (await api.checkout(second.id, ann)).orderId as string;
    await waitForConfirmed([a1, b1, a2]);

    const mine = await api.myOrders(ann);
    expect(mine.status).toBe(200);
    expect(mine.body?.orders.map((o) => o.orderId)).toEqual([a2, a1]);
    expect(mine.body?.nextCursor).toBeNull();
    expect((await api.myOrders(bob)).body?.orders.map((o) => o.orderId)).toEqual([b1]);
    expect((await api.fetch("/api/orders")).status).toBe(401);
  });

  it("pages with a cursor, no order twice or lost", async () => {
    const sale = await createSale({ stock: 100 });
    await insertOrders(sale.id, 60, "pager", { userOf: () => "lists-pager", somePaid: false }); // expired: one buyer may have many
    const token = await api.userToken("lists-pager");
    const first = await api.myOrders(token);
    expect(first.body?.orders).toHaveLength(50);
    const second = await api.myOrders(token, first.body?.nextCursor as string);
    expect(second.body?.orders).toHaveLength(10);
    expect(second.body?.nextCursor).toBeNull();
    const ids = [...(first.body?.orders ?? []), ...(second.body?.orders ?? [])].map((o) => o.orderId);
    expect(new Set(ids).size).toBe(60);
    // Newest first: the internal ids were minted in that order (the public ones tell nothing of it).
    const internal = ids.map(internalId);
    expect(internal).toEqual([...internal].sort().reverse());
    expect((await api.fetch("/api/orders?cursor=nope", { headers: { Authorization: `Bearer ${token}` } })).status).toBe(400);
  });
});
