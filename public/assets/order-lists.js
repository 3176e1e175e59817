// @ts-check
// The console's orders of the watched sale: the list (GET /admin/sales/:saleId/orders),
// filtered by state, newest first, a page at a time by its cursor; one order with its history,
// payment attempts and the events sent about it (GET /admin/orders/:orderId); and the same
// list as a CSV file (orders.csv). Kept apart from the sale's figures in admin.js, which
// hands in its authenticated callers.
import { $, badge, cellOf, factItems, row, rowButton, saveFile, say } from "./lib/console-page.js";
import { formatMoment, formatMoney, formatTime, words } from "./lib/format.js";
import { attemptsCell } from "./order-events.js";

/** Orders a page of the list holds. */
const PAGE_SIZE = 50;
/** The list's columns. */
const COLUMNS = 9;
/** Pages a search by reference reads through, at most (a page of 200 orders each). */
const SEARCH_PAGES = 50;
const SEARCH_PAGE_SIZE = 200;

/**
 * An order's short reference as a person types it: Crockford's base32 is read without case,
 * I and L as 1, O as 0, hyphens and spaces ignored. @param {string} typed
 */
const referenceOf = (typed) => typed.toUpperCase().replace(/[\s-]/g, "").replace(/[IL]/g, "1").replace(/O/g, "0");

/** An order as people name it: its reference, with the id beside it. @param {any} order */
function orderName(order) {
  const name = document.createElement("span");
  const reference = document.createElement("strong");
  reference.className = "num";
  reference.textContent = order.reference;
  const id = document.createElement("span");
  id.className = "muted num order-id";
  id.textContent = order.orderId;
  name.append(reference, " ", id);
  return name;
}

/** @typedef {import("./order-events.js").AdminCall} AdminCall */
/** @typedef {(path: string) => Promise<{ status: number, file?: Blob, filename: string, message: string }>} AdminDownload */

/** @param {string | null} iso */
const timeOrDash = (iso) => (iso ? formatTime(iso) : "–");

/** @param {string} text */
const numeric = (text) => {
  const td = cellOf(text);
  td.className = "n";
  return td;
};

/**
 * A table's rows, or one row saying there are none.
 * @param {string} bodyId @param {HTMLTableRowElement[]} rows @param {string} none @param {number} columns
 */
function fillTable(bodyId, rows, none, columns) {
  $(bodyId).replaceChildren(...(rows.length > 0 ? rows : [row([[none, ""]], columns)]));
}

/**
 * The orders section of the console.
 * @param {AdminCall} admin the console's admin caller (it locks the console on a 401)
 * @param {AdminDownload} download the same for a file
 */
export function saleOrdersPanel(admin, download) {
  /** The sale shown, the state filter and the list's next page. @type {{ saleId: string, status: string, cursor: string | null } | undefined} */
  let list;

  /** @param {any} order */
  function orderRow(order) {
    const tr = document.createElement("tr");
    tr.dataset.order = order.orderId;
    tr.dataset.reference = order.reference;
    tr.append(
      cellOf(orderName(order)),
      cellOf(order.userId),
      cellOf(order.variantLabel ?? "–"),
      cellOf(badge(order.status)),
      numeric(String(order.quantity)),
      numeric(order.currency ? formatMoney(order.amount, order.currency) : String(order.amount)),
      cellOf(formatTime(order.createdAt)),
      cellOf(timeOrDash(order.closedAt)),
      cellOf(rowButton("Details", `of order ${order.reference}`, () => void showOrder(order.orderId))),
    );
    return tr;
  }

  /** @param {boolean} fresh the first page again, or the next one after those shown */
  async function loadOrders(fresh) {
    if (!list) return;
    const shown = list;
    if (fresh) shown.cursor = null;
    const params = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (shown.status) params.set("status", shown.status);
    if (shown.cursor) params.set("cursor", shown.cursor);
    say("orders-status", "Reading the orders…", "wait");
    const answer = await admin(`/admin/sales/${shown.saleId}/orders?${params}`);
    if (list !== shown) return;
    if (answer.status !== 200) {
      if (answer.status !== 401) say("orders-status", `The orders cannot be read right now (${answer.message}).`, "bad");
      return;
    }
    const rows = answer.body.orders.map(orderRow);
    const before = $("order-rows").querySelectorAll("tr[data-order]").length;
    if (fresh) fillTable("order-rows", rows, "No orders in this state.", COLUMNS);
    else $("order-rows").append(...rows);
    shown.cursor = answer.body.nextCursor;
    $("more-orders").hidden = !shown.cursor;
    const count = fresh ? rows.length : before + rows.length;
    const which = shown.status ? ` ${words(shown.status)}` : "";
    say(
      "orders-status",
      `${count}${which} ${count === 1 ? "order" : "orders"} shown, newest first${shown.cursor ? "; more below" : ""}.`,
    );
    // After "More orders", the first new row's button takes the focus: the keyboard goes on where the list grew.
    if (!fresh) /** @type {HTMLElement | null} */ (rows[0]?.querySelector("button"))?.focus();
  }

  /** @param {string} orderId */
  async function showOrder(orderId) {
    const answer = await admin(`/admin/orders/${orderId}`);
    if (answer.status !== 200) {
      if (answer.status !== 401) say("orders-status", `Order ${orderId} cannot be read right now (${answer.message}).`, "bad");
      return;
    }
    renderOrder(answer.body);
    $("order-detail").hidden = false;
    $("order-detail-title").focus();
  }

  /** @param {any} order */
  function renderOrder(order) {
    $("detail-order-id").textContent = order.reference;
    /** @type {[string, string][]} */
    const facts = [
      ["Order id", order.orderId],
      ["Product", order.saleName],
      ...(order.variantLabel ? /** @type {[string, string][]} */ ([["Size", order.variantLabel]]) : []),
      ["State", words(order.status)],
      ["Buyer", order.userId],
      ["Units", String(order.quantity)],
      ["Amount", order.currency ? formatMoney(order.amount, order.currency) : String(order.amount)],
      ["Reserved", formatTime(order.createdAt)],
      ["Ended", timeOrDash(order.closedAt)],
      ["Pay by", timeOrDash(order.expiresAt)],
      ["Refund due", order.refundDue ? "yes" : "no"],
    ];
    if (order.failureReason) facts.push(["Why it failed", words(order.failureReason)]);
    // The request's trace, which finds every log line of the order (npm run trace on the local stack).
    if (order.traceparent) facts.push(["Trace (traceparent)", order.traceparent]);
    $("detail-facts").replaceChildren(...factItems(facts));
    fillTable(
      "history-rows",
      order.history.map((/** @type {any} */ h) =>
        row([
          [formatMoment(h.at), ""],
          [h.type, ""],
        ]),
      ),
      "No state changes in the order records yet.",
      2,
    );
    fillTable(
      "payment-rows",
      order.payments.map((/** @type {any} */ p) =>
        row([
          [formatMoment(p.createdAt), ""],
          [words(p.status), ""],
          [p.providerRef ?? "–", ""],
          [p.declineReason ? words(p.declineReason) : "–", ""],
        ]),
      ),
      "No payment attempts.",
      4,
    );
    fillTable(
      "sent-rows",
      order.deliveries.map((/** @type {any} */ d) => {
        const tr = document.createElement("tr");
        tr.append(cellOf(d.type), cellOf(d.endpointId), cellOf(badge(d.status)), attemptsCell(d, `${d.type} to ${d.endpointId}`));
        return tr;
      }),
      "No events sent: no endpoint receives this order's events.",
      4,
    );
  }

  $("orders-filter").addEventListener("submit", (event) => {
    event.preventDefault();
    if (!list) return;
    list.status = /** @type {HTMLSelectElement} */ ($("orders-state")).value;
    $("order-detail").hidden = true;
    void loadOrders(true);
  });

  $("more-orders").addEventListener("click", () => void loadOrders(false));

  /**
   * Finds an order: by its id at once (any sale's), or by its reference in the watched sale's
   * list, page after page (the reference is not stored apart: the list is read until it shows).
   * @param {string} typed
   */
  async function findOrder(typed) {
    if (!list) return;
    const text = typed.trim();
    if (/^\d{1,20}$/.test(text)) return showOrder(text);
    const wanted = referenceOf(text);
    if (!/^[0-9A-Z]{8}$/.test(wanted)) {
      say("find-status", "Type an order's reference (8 letters and digits, such as 7KQ4-M2XD) or its id.", "bad");
      return;
    }
    const { saleId } = list;
    /** @type {any[]} */
    const found = [];
    let cursor = null;
    say("find-status", "Searching the sale's orders…", "wait");
    for (let pages = 0; pages < SEARCH_PAGES; pages++) {
      const params = new URLSearchParams({ limit: String(SEARCH_PAGE_SIZE) });
      if (cursor) params.set("cursor", cursor);
      const answer = await admin(`/admin/sales/${saleId}/orders?${params}`);
      if (answer.status !== 200) {
        if (answer.status !== 401) say("find-status", `The orders cannot be searched right now (${answer.message}).`, "bad");
        return;
      }
      found.push(...answer.body.orders.filter((/** @type {any} */ o) => referenceOf(o.reference) === wanted));
      cursor = answer.body.nextCursor;
      if (!cursor) break;
    }
    const read = cursor ? ` among the newest ${SEARCH_PAGES * SEARCH_PAGE_SIZE} orders` : "";
    if (found.length === 0) {
      say("find-status", `No order of sale ${saleId} has the reference ${text}${read}.`, "bad");
      return;
    }
    const many =
      found.length > 1 ? ` ${found.length} orders share this reference: the newest is shown, the others are in the list.` : "";
    say("find-status", `Found ${found[0].reference}.${many}`, "good");
    await showOrder(found[0].orderId);
  }

  $("find-order").addEventListener("submit", (event) => {
    event.preventDefault();
    void findOrder(/** @type {HTMLInputElement} */ ($("find-order-text")).value);
  });

  $("orders-export").addEventListener("click", async () => {
    if (!list) return;
    const status = /** @type {HTMLSelectElement} */ ($("orders-state")).value;
    say("export-status", "Exporting…", "wait");
    const answer = await download(`/admin/sales/${list.saleId}/orders.csv${status ? `?status=${status}` : ""}`);
    if (!answer.file) {
      if (answer.status !== 401) say("export-status", `Not exported: ${answer.message}`, "bad");
      return;
    }
    saveFile(answer.file, answer.filename);
    say("export-status", `Downloaded ${answer.filename}${status ? ` (${words(status)} orders)` : ""}.`, "good");
  });

  $("order-close").addEventListener("click", () => {
    $("order-detail").hidden = true;
    $("sale-orders-title").focus();
  });

  return {
    /** The watched sale changed: its orders from the first page, with the filter as it is set. @param {string} saleId */
    show(saleId) {
      list = { saleId, status: /** @type {HTMLSelectElement} */ ($("orders-state")).value, cursor: null };
      $("orders-sale-id").textContent = saleId;
      $("sale-orders").hidden = false;
      $("order-detail").hidden = true;
      say("export-status", "");
      say("find-status", "");
      void loadOrders(true);
    },
    /** The console locked: no order stays on the page. */
    forget() {
      list = undefined;
      $("sale-orders").hidden = true;
      $("order-rows").replaceChildren();
      $("order-detail").hidden = true;
    },
  };
}
