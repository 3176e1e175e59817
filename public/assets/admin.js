// @ts-check
// The admin console, in sections one click apart (lib/console-sections.js): Watch (the sales
// the storefront lists, or any by number, watched live from one poll of GET
// /admin/sales/:id/stats every 2 s: outcomes per second, remaining stock, orders by state, the
// reconciliation; pause, resume or cancel; its waiting room and notice, drop-controls.js), Orders (order-lists.js), Draw (console-draw.js:
// a draw sale's entries, commitment, progress and results), Lanes and codes (console-lanes.js:
// a sale's presale lanes, their codes, and staff passes), Create and edit
// (create-form.js, edit-form.js), Order events (order-events.js), Deny rules (deny-rules.js) and Settings
// (console-settings.js). This module unlocks it and watches the sale the others act on.
// The admin token is kept for the tab (sessionStorage), so a reload does not lock the
// console; never in localStorage, never in the URL; Lock forgets it.

import { drawPanel } from "./console-draw.js";
import { funnelPanel } from "./console-funnel.js";
import { lanesPanel } from "./console-lanes.js";
import { loadShopSettings } from "./console-settings.js";
import { createForm } from "./create-form.js";
import { denyRulesPanel } from "./deny-rules.js";
import { dropControls } from "./drop-controls.js";
import { editForm } from "./edit-form.js";
import { call, fetchFile } from "./lib/api.js";
import { drawChart } from "./lib/chart.js";
import { $, row, rowButton, say } from "./lib/console-page.js";
import { focusShownSection, followSections, goTo } from "./lib/console-sections.js";
import { formatTime, words } from "./lib/format.js";
import { tabStorage } from "./lib/tab-storage.js";
import { hasVariants } from "./lib/variants.js";
import { orderEventsPanel } from "./order-events.js";
import { saleOrdersPanel } from "./order-lists.js";

const STATS_POLL_MS = 2000;
const SALE_ID = /^[1-9][0-9]{0,15}$/;
const SERIES_CLASSES = 8;
const KEPT_TOKEN = "flash-sale:admin-token";

/** @type {string | undefined} */
let adminToken;
/** @type {{ saleId: string, stopped: boolean, loaded: boolean } | undefined} */
let watching;
/** @type {any} the watched sale as last read ("Copy this sale" copies it) */
let watchedSale;
/** Colours stay with their code while the page lives, whatever order codes arrive in. */
const seriesOf = new Map([["OK", 0]]);

/** Order states keep one colour each: held green or amber, given back red or grey. */
const STATE_SERIES = /** @type {Record<string, number>} */ ({
  confirmed: 0,
  paid: 5,
  pending: 2,
  "awaiting payment": 3,
  failed: 1,
  expired: 6,
  cancelled: 7,
});

/** @param {string} state as the report names it (pending, awaiting_payment, ...) */
const stateClass = (state) => {
  const series = STATE_SERIES[words(state)];
  return series === undefined ? seriesClass(`state:${state}`) : `series-${series}`;
};

/** @param {string} code */
const seriesClass = (code) => {
  if (!seriesOf.has(code)) seriesOf.set(code, seriesOf.size % SERIES_CLASSES);
  return `series-${seriesOf.get(code)}`;
};

/** @param {string} path @param {{ method?: string, body?: unknown, headers?: Record<string, string> }} [options] */
async function admin(path, options = {}) {
  const answer = await call("", path, { ...options, adminToken });
  if (answer.status === 401) lock("The admin token was refused: enter it again.");
  return answer;
}

/**
 * @param {string} path a file the admin API answers (the CSV export, a batch of codes)
 * @param {{ method?: string, body?: unknown, accept?: string }} [options]
 */
async function adminFile(path, options = {}) {
  const answer = await fetchFile("", path, { ...options, adminToken });
  if (answer.status === 401) lock("The admin token was refused: enter it again.");
  return answer;
}

const orderEvents = orderEventsPanel(admin);
const saleOrders = saleOrdersPanel(admin, adminFile);
const denyRules = denyRulesPanel(admin);
const drawing = drawPanel(admin);
const laning = lanesPanel(admin, adminFile);
const funnel = funnelPanel(admin);
const creating = createForm(admin, (sale) => {
  void salesList.reload();
  watch(sale.id);
  goTo("watch", "live-title");
});
const editing = editForm(admin, { saved: () => void salesList.reload(), watched: () => watching?.saleId });
const controls = dropControls(admin, { watched: () => watching?.saleId, pending: showPending });

/**
 * A change D1 recorded that the live stock store (Redis) has not applied yet: it is pushed
 * again by itself, so the operator is told to wait, not to press again.
 * @param {boolean} pending
 */
function showPending(pending) {
  $("live-sync").hidden = !pending;
  $("live-sync").textContent = pending
    ? "Pending: the last change is recorded but the live stock store has not applied it yet (it cannot be reached right now). It gets there by itself; until then buyers are served the sale as it was."
    : "";
}

// ---------------------------------------------------------------------------------------
// Unlocking and locking

/**
 * Unlocks with `token` once the API takes it: any admin route proves it, and the deny rules
 * are one the console shows anyway (so unlocking asks for nothing it does not use).
 * @param {string} token @param {boolean} kept the tab's kept token, tried on loading the page
 */
async function unlock(token, kept) {
  const probe = await call("", "/admin/deny-rules", { adminToken: token });
  if (probe.status !== 200) {
    $("unlock").hidden = false;
    if (probe.status === 401 || probe.status === 403) {
      tabStorage.remove(KEPT_TOKEN);
      return say(
        "unlock-status",
        kept ? "The token kept for this tab was refused: enter it again." : "That is not the admin token.",
        "bad",
      );
    }
    if (probe.status === 0) return say("unlock-status", "The server cannot be reached.", "bad");
    return say("unlock-status", `The console cannot be unlocked right now (${probe.message}).`, "bad");
  }
  adminToken = token;
  tabStorage.set(KEPT_TOKEN, token);
  /** @type {HTMLInputElement} */ ($("admin-token")).value = "";
  say("unlock-status", "");
  $("unlock").hidden = true;
  $("console").hidden = false;
  $("lock").hidden = false;
  denyRules.render(probe.body.rules);
  void salesList.reload();
  void orderEvents.load();
  void loadShopSettings();
  funnel.start();
  if (!kept) focusShownSection();
}

$("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  void unlock(/** @type {HTMLInputElement} */ ($("admin-token")).value, false);
});

/** @param {string} message */
function lock(message) {
  adminToken = undefined;
  tabStorage.remove(KEPT_TOKEN);
  if (watching) watching.stopped = true;
  watching = undefined;
  watchedSale = undefined;
  $("console").hidden = true;
  $("lock").hidden = true;
  $("live").hidden = true;
  $("orders-none").hidden = false;
  controls.forget();
  saleOrders.forget();
  drawing.forget();
  laning.forget();
  funnel.forget();
  orderEvents.forget();
  denyRules.forget();
  creating.forget();
  editing.forget();
  $("unlock").hidden = false;
  say("unlock-status", message, message ? "bad" : "");
  /** @type {HTMLInputElement} */ ($("admin-token")).focus();
}

$("lock").addEventListener("click", () => lock(""));

// ---------------------------------------------------------------------------------------
// The sales the storefront lists (upcoming and live, by start), a page at a time; ended and
// cancelled ones are opened by number.

const salesList = {
  /** @type {string | null} */
  cursor: null,
  loading: false,

  /** The list again from its first page. */
  async reload() {
    if (this.loading) return;
    this.cursor = null;
    await this.load(true);
  },

  /** @param {boolean} [fresh] */
  async load(fresh = false) {
    if (this.loading) return;
    this.loading = true;
    try {
      const answer = await call("", `/api/sales${this.cursor ? `?cursor=${encodeURIComponent(this.cursor)}` : ""}`);
      if (answer.status !== 200) {
        say("sales-status", `The list cannot be read right now (${answer.message}).`, "bad");
        return;
      }
      const rows = answer.body.sales.map(saleRow);
      if (fresh) $("sales-rows").replaceChildren(...rows);
      else $("sales-rows").append(...rows);
      this.cursor = answer.body.nextCursor;
      $("more-admin-sales").hidden = !this.cursor;
      const shown = $("sales-rows").childElementCount;
      say("sales-status", shown === 0 ? "No upcoming or live sales." : `${shown} ${shown === 1 ? "sale" : "sales"} listed.`);
    } finally {
      this.loading = false;
    }
  },
};

/** @param {any} sale */
function saleRow(sale) {
  const tr = row([
    [sale.id, "n"],
    [sale.name, ""],
    [words(sale.status), ""],
    [String(sale.remaining), "n"],
  ]);
  const button = rowButton("Watch", `sale ${sale.id}`, () => {
    watch(sale.id);
    $("live-title").focus();
  });
  const td = document.createElement("td");
  td.append(button);
  tr.append(td);
  return tr;
}

$("more-admin-sales").addEventListener("click", () => void salesList.load());
$("refresh-sales").addEventListener("click", () => void salesList.reload());

// ---------------------------------------------------------------------------------------
// Watching a sale

$("watch-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const id = /** @type {HTMLInputElement} */ ($("watch-id")).value.trim();
  if (!SALE_ID.test(id)) return;
  watch(id);
  $("live-title").focus();
});

/** @param {string} saleId */
function watch(saleId) {
  if (watching) watching.stopped = true;
  const run = { saleId, stopped: false, loaded: false };
  watching = run;
  /** @type {HTMLInputElement} */ ($("watch-id")).value = saleId;
  $("live").hidden = false;
  $("live-id").textContent = saleId;
  $("live-name").textContent = "…";
  /** @type {HTMLAnchorElement} */ ($("live-storefront")).href = `/?sale=${saleId}`;
  say("live-status", "");
  showPending(false);
  watchedSale = undefined;
  controls.forget();
  editing.forget();
  drawing.forget();
  laning.forget();
  funnel.watch(saleId);
  $("orders-none").hidden = true;
  saleOrders.show(saleId);
  void poll(run);
}

/** @param {{ saleId: string, stopped: boolean, loaded: boolean }} run */
async function poll(run) {
  while (!run.stopped) {
    const answer = await admin(`/admin/sales/${run.saleId}/stats`);
    if (run.stopped) return;
    if (answer.status === 200) {
      watchedSale = answer.body.sale;
      render(answer.body);
      drawing.sawSale(answer.body.sale);
      showPending(answer.body.sale.syncPending);
      await controls.sawSale(answer.body.sale);
      laning.sawSale(answer.body.sale);
      // The edit form loads the sale once per watch (and on Reload); later reads only rebase it.
      if (!run.loaded) editing.load(answer.body.sale);
      else editing.sawSale(answer.body.sale);
      run.loaded = true;
      if ($("live-status").dataset.tone === "wait") say("live-status", "");
    } else if (answer.status === 404 || answer.status === 400) {
      $("live-name").textContent = "no such sale";
      say("live-status", `There is no sale ${run.saleId}.`, "bad");
      return;
    } else if (answer.status !== 401) {
      say("live-status", `The figures cannot be read right now (${answer.message}); retrying.`, "wait");
      // The waiting room's view answers from the order records even while the live stock store is out.
      if (watchedSale) await controls.sawSale(watchedSale);
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(STATS_POLL_MS, answer.retryAfterMs)));
  }
}

/** The sale's own figures: name, state, window, stock. @param {any} sale */
function renderState(sale) {
  $("live-name").textContent = sale.name;
  $("live-state").dataset.state = sale.status;
  $("live-state").textContent = words(sale.status);
  $("live-window").textContent = `${formatTime(sale.startsAt)} to ${formatTime(sale.endsAt)}`;
  $("tile-remaining").textContent = String(sale.remaining);
  $("tile-stock").textContent = String(sale.stock);
  $("variants-panel").hidden = !hasVariants(sale);
}

/** The live stock store's (Redis') health, as a shop owner reads it: a word, and what it means. */
const STORE_HEALTH = /** @type {Record<string, [string, string]>} */ ({
  live: ["healthy", ""],
  behind: ["behind", "checkouts wait (answered 503) until it is rebuilt from the order records"],
  rebuilding: ["rebuilding", "from the order records; checkouts resume when it is done"],
});

/** An outcome code as the table names it: "OK (accepted)", "sold out (SOLD_OUT)". @param {string} code */
const outcomeInWords = (code) => (code === "OK" ? "OK (accepted)" : `${words(code)} (${code})`);

/**
 * @param {{ sale: any, series: { from: number, to: number, points: { at: number, counts: Record<string, number> }[] }, report: any }} stats
 */
function render({ sale, series, report }) {
  renderState(sale);

  // Outcomes: per second and per code, whatever codes the counters hold.
  /** @type {Map<string, Map<number, number>>} */
  const byCode = new Map();
  for (const { at, counts } of series.points) {
    for (const [code, n] of Object.entries(counts)) {
      if (!byCode.has(code)) byCode.set(code, new Map());
      byCode.get(code)?.set(at, n);
    }
  }
  const total = (/** @type {string} */ code, /** @type {number} */ since) => {
    let sum = 0;
    for (const [at, n] of byCode.get(code) ?? []) if (at >= since) sum += n;
    return sum;
  };
  const recent = series.to - 9;
  const codes = [...byCode.keys()].sort((a, b) => (a === "OK" ? -1 : b === "OK" ? 1 : total(b, 0) - total(a, 0)));
  const accepted = total("OK", recent) / 10;
  const refused = codes.filter((c) => c !== "OK").reduce((sum, c) => sum + total(c, recent), 0) / 10;
  $("tile-accepted").textContent = accepted.toFixed(1);
  $("tile-refused").textContent = refused.toFixed(1);
  drawChart(/** @type {SVGGElement} */ (/** @type {unknown} */ ($("chart"))), {
    from: series.from,
    to: series.to,
    codes,
    perSecond: (code, at) => byCode.get(code)?.get(at) ?? 0,
    seriesClass,
  });
  $("outcome-rows").replaceChildren(
    ...(codes.length === 0
      ? [row([["No checkouts in the last five minutes.", ""]], 3)]
      : codes.map((code) =>
          row([
            [outcomeInWords(code), seriesClass(code)],
            [(total(code, recent) / 10).toFixed(1), "n"],
            [String(total(code, 0)), "n"],
          ]),
        )),
  );

  // Each variant's figures as the report reconciles them: what Redis has left, what is held.
  if (hasVariants(sale)) {
    $("variant-rows").replaceChildren(
      ...sale.variants.map((/** @type {any} */ v) => {
        const figures = report.variants?.[v.id] ?? {};
        return row([
          [`${v.label} (${v.id})`, ""],
          [String(v.stock), "n"],
          [figures.remaining === null || figures.remaining === undefined ? "–" : String(figures.remaining), "n"],
          [String(figures.held ?? "–"), "n"],
          [String(figures.returned ?? "–"), "n"],
        ]);
      }),
    );
  }

  // Orders by state, as the report counts them (pending ones in the outbox, the rest in D1).
  const states = Object.entries(report.states ?? {}).map(([name, count]) => [name, Number(count?.orders ?? 0)]);
  const sum = states.reduce((s, [, n]) => s + Number(n), 0);
  $("state-bar").replaceChildren(
    ...states.map(([name, n]) => {
      const part = document.createElement("span");
      part.className = stateClass(String(name));
      part.style.flexGrow = String(sum > 0 ? n : 0);
      return part;
    }),
  );
  $("state-rows").replaceChildren(
    ...states.map(([name, n]) =>
      row([
        [words(String(name)), stateClass(String(name))],
        [String(n), "n"],
      ]),
    ),
  );

  // Recovery from a Redis that lost the sale or came back behind D1: live, behind or rebuilding.
  const health = report.health ?? {};
  const store = STORE_HEALTH[health.state];
  $("tile-health").textContent = store?.[0] ?? String(health.state ?? "–");
  $("health-detail").textContent = [
    store?.[1] ?? "",
    health.rebuiltAt
      ? `rebuilt from the order records at ${new Date(health.rebuiltAt).toLocaleTimeString()} (${health.rebuilds}×)`
      : "",
    health.failedByRollback > 0 ? `${health.failedByRollback} orders failed because the store had gone back in time` : "",
  ]
    .filter(Boolean)
    .join("; ");

  const oversold = Number(report.oversold) || 0;
  $("tile-verdict").textContent = oversold > 0 ? "oversold" : report.reconciled ? "reconciled" : "not reconciled";
  $("verdict").textContent =
    oversold > 0
      ? `Oversold by ${oversold}.`
      : report.reconciled
        ? "Reconciled: every order the live stock store took is in the order records (or on its way there), and the stock adds up."
        : "Not reconciled: the live stock store and the order records disagree; every figure is below.";
  // Big keys: Upstash refuses writes to a key past REDIS_MAX_RECORD_BYTES; past half, the report warns.
  const largest = report.largestKey;
  $("largest-key").textContent = largest
    ? `Largest record in the live stock store: ${(largest.bytes / 2 ** 20).toFixed(2)} MiB, ${(largest.share * 100).toFixed(1)}% of what one record may hold (key ${largest.key}).${(report.warnings ?? []).map((/** @type {string} */ w) => ` Warning: ${w}.`).join("")}`
    : "";
  $("largest-key").classList.toggle("warning", (report.warnings ?? []).length > 0);
  $("report-rows").replaceChildren(
    ...flatten(report).map(([name, value]) =>
      row([
        [name, ""],
        [value, "n"],
      ]),
    ),
  );
  $("updated-at").textContent = new Date().toLocaleTimeString();
}

/** Every leaf of the report as "path: value", so fields added to it later show up too. */
function flatten(/** @type {any} */ value, prefix = "") {
  /** @type {[string, string][]} */
  const rows = [];
  for (const [key, v] of Object.entries(value ?? {})) {
    const name = prefix ? `${prefix}.${key}` : key;
    if (v && typeof v === "object") rows.push(...flatten(v, name));
    else rows.push([name, String(v)]);
  }
  return rows;
}

// ---------------------------------------------------------------------------------------
// Operations: pause, resume, cancel. Each is idempotent, so pressing again is always safe.

/** What each operation did, said of the sale after it. */
const DONE = /** @type {Record<string, string>} */ ({ pause: "paused", resume: "resumed", cancel: "cancelled" });

for (const button of document.querySelectorAll("[data-operation]")) {
  button.addEventListener("click", async () => {
    const operation = /** @type {HTMLElement} */ (button).dataset.operation ?? "";
    const saleId = watching?.saleId;
    if (!saleId) return;
    if (
      operation === "cancel" &&
      !confirm(
        `Cancel sale ${saleId}? Buyers can no longer check out, and orders holding units are cancelled (paid ones refunded). This cannot be undone.`,
      )
    )
      return;
    const label = /** @type {HTMLElement} */ (button).textContent?.trim() ?? operation;
    say("live-status", `${label}…`, "wait");
    const answer = await admin(`/admin/sales/${saleId}/${operation}`, { method: "POST" });
    if (watching?.saleId !== saleId) return;
    if (answer.status === 200) {
      const sale = answer.body;
      renderState(sale);
      editing.sawSale(sale);
      showPending(sale.syncPending);
      say("live-status", `Sale ${saleId} ${DONE[operation]}: it is now ${words(sale.status)}.`, "good");
      void salesList.reload();
    } else if (answer.code === "SALE_CANCELLED") {
      say("live-status", `Sale ${saleId} was cancelled: a cancelled sale can be neither paused nor resumed.`, "bad");
    } else if (answer.status === 503) {
      say(
        "live-status",
        `Recorded, but not yet in force everywhere (${answer.message}). Press ${label} again to finish: sending it again is safe.`,
        "bad",
      );
    } else if (answer.status === 0) {
      say("live-status", `The server did not answer. Press ${label} again: sending it again is safe.`, "bad");
    } else if (answer.status !== 401) {
      say("live-status", `Not done: ${answer.message}`, "bad");
    }
  });
}

// ---------------------------------------------------------------------------------------
// To the other sections with the watched sale: edit it, or copy it into the create form.

$("edit-this-sale").addEventListener("click", () => goTo("create", "edit-title"));

$("copy-sale").addEventListener("click", () => {
  if (!watchedSale) return say("live-status", "The sale has not been read yet: try again in a moment.", "wait");
  creating.copy(watchedSale);
  goTo("create", "create-title");
});

// ---------------------------------------------------------------------------------------
// Start: the section the URL names, and the tab's kept token tried at once.

followSections();
const keptToken = tabStorage.get(KEPT_TOKEN);
if (keptToken) {
  $("unlock").hidden = true;
  void unlock(keptToken, true);
}
