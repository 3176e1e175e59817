// @ts-check
// The admin console: the sales the storefront lists (or any by number), create a sale, then
// watch it live from one poll of GET /admin/sales/:id/stats every 2 s (outcomes per second,
// remaining stock, orders by state, the reconciliation verdict); pause, resume or cancel it,
// and edit it with If-Match on the version the form loaded. The watched sale's orders and the
// shop's order events are sections of their own (order-lists.js, order-events.js).
// The admin token lives in this module's memory only: never in storage, never in the URL.
import { call, fetchFile, idempotencyKey } from "./lib/api.js";
import { drawChart } from "./lib/chart.js";
import { $, row, rowButton, say } from "./lib/console-page.js";
import { formatTime, words } from "./lib/format.js";
import { orderEventsPanel } from "./order-events.js";
import { saleOrdersPanel } from "./order-lists.js";

const STATS_POLL_MS = 2000;
const SALE_ID = /^[1-9][0-9]{0,15}$/;
const SERIES_CLASSES = 8;

/** @type {string | undefined} */
let adminToken;
/** @type {{ saleId: string, stopped: boolean, loaded: boolean } | undefined} */
let watching;
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

/** @param {string} path a file the admin API answers (the CSV export) */
async function adminFile(path) {
  const answer = await fetchFile("", path, { adminToken });
  if (answer.status === 401) lock("The admin token was refused: enter it again.");
  return answer;
}

const orderEvents = orderEventsPanel(admin);
const saleOrders = saleOrdersPanel(admin, adminFile);

// ---------------------------------------------------------------------------------------
// Unlocking and locking

$("token-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = /** @type {HTMLInputElement} */ ($("admin-token"));
  // Any admin route proves the token: an unknown sale's stats answer 404 to a valid one, 401 otherwise.
  const probe = await call("", "/admin/sales/1/stats", { adminToken: input.value });
  if (probe.status === 401 || probe.status === 403) return say("unlock-status", "That is not the admin token.", "bad");
  if (probe.status === 0) return say("unlock-status", "The server cannot be reached.", "bad");
  adminToken = input.value;
  input.value = "";
  say("unlock-status", "");
  $("unlock").hidden = true;
  $("console").hidden = false;
  $("lock").hidden = false;
  setDefaultWindow();
  void salesList.reload();
  void loadDenyRules();
  void orderEvents.load();
  $("console-title").focus();
});

/** @param {string} message */
function lock(message) {
  adminToken = undefined;
  if (watching) watching.stopped = true;
  watching = undefined;
  $("console").hidden = true;
  $("lock").hidden = true;
  $("live").hidden = true;
  saleOrders.forget();
  orderEvents.forget();
  $("unlock").hidden = false;
  say("unlock-status", message, message ? "bad" : "");
  /** @type {HTMLInputElement} */ ($("admin-token")).focus();
}

$("lock").addEventListener("click", () => lock(""));

// ---------------------------------------------------------------------------------------
// Creating a sale

/** A datetime-local value for a moment, in this browser's time zone. */
function localInput(/** @type {number} */ ms) {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

function setDefaultWindow() {
  const inAMinute = Math.ceil((Date.now() + 60_000) / 60_000) * 60_000;
  /** @type {HTMLInputElement} */ ($("sale-starts")).value = localInput(inAMinute);
  /** @type {HTMLInputElement} */ ($("sale-ends")).value = localInput(inAMinute + 3_600_000);
}

/** The key of the sale being created: kept across retries of the same form, new once it changes. */
let createKey = idempotencyKey();
$("create-form").addEventListener("input", () => {
  createKey = idempotencyKey();
});

/**
 * Variants as typed, one per line: "id, label, stock[, price]" (the label may not hold a
 * comma); the API checks ids, stocks and prices and answers what is wrong.
 * @param {string} text
 * @returns {{ id: string; label: string; stock: number; price?: number }[]}
 */
function parseVariants(text) {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "")
    .map((line) => {
      const [id = "", label = "", stock = "", price = ""] = line.split(",").map((part) => part.trim());
      return { id, label, stock: Number(stock), ...(price !== "" && { price: Number(price) }) };
    });
}

/** Variants as the edit form shows them, a line each. @param {any[]} variants */
const variantLines = (variants) => variants.map((v) => `${v.id}, ${v.label}, ${v.stock}, ${v.price}`).join("\n");

/** A sale made in variants (one named "default" alone is a sale without). @param {any} sale */
const hasVariants = (sale) => (sale.variants ?? []).length > 1 || (sale.variants?.[0] && sale.variants[0].id !== "default");

/** The request body: required fields, and each optional one only when filled in. */
function saleBody(/** @type {HTMLFormElement} */ form) {
  const data = new FormData(form);
  const text = (/** @type {string} */ name) => String(data.get(name) ?? "").trim();
  const variants = parseVariants(text("variants"));
  /** @type {Record<string, unknown>} */
  const body = {
    name: text("name"),
    ...(variants.length > 0 ? { variants } : { stock: Number(text("stock")) }),
    startsAt: new Date(text("startsAt")).toISOString(),
    endsAt: new Date(text("endsAt")).toISOString(),
  };
  if (text("rate") || text("burst")) body.admission = { rate: Number(text("rate")), burst: Number(text("burst")) };
  for (const name of ["price", "paymentWindowSec", "perUserLimit"]) if (text(name)) body[name] = Number(text(name));
  for (const name of ["currency", "imageUrl", "description"]) if (text(name)) body[name] = text(name);
  if (text("queueMode") !== "off") {
    /** @type {Record<string, unknown>} */
    const queue = { mode: text("queueMode") };
    for (const name of ["prequeueSec", "admitPerSec", "passTtlSec"]) if (text(name)) queue[name] = Number(text(name));
    body.queue = queue;
  }
  if (data.get("humanCheck")) body.humanCheck = true;
  return body;
}

$("create-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = /** @type {HTMLFormElement} */ (event.target);
  let body;
  try {
    body = saleBody(form);
  } catch {
    return say("create-status", "Give both the start and the end.", "bad");
  }
  say("create-status", "Creating…", "wait");
  const answer = await admin("/admin/sales", { method: "POST", body, headers: { "Idempotency-Key": createKey } });
  if (answer.status === 201 || answer.status === 200) {
    const sale = answer.body;
    say("create-status", `${answer.status === 201 ? "Created" : "Already created"}: sale ${sale.id}, ${sale.name}.`, "good");
    createKey = idempotencyKey();
    void salesList.reload();
    watch(sale.id);
    $("live-title").focus();
  } else if (answer.status === 0 || answer.status === 503) {
    say("create-status", "The server did not answer. Press Create again: the same request never creates two sales.", "bad");
  } else if (answer.status !== 401) {
    say("create-status", `Not created: ${answer.message}`, "bad");
  }
});

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
  say("edit-status", "");
  editing = undefined;
  saleOrders.show(saleId);
  void poll(run);
}

/** @param {{ saleId: string, stopped: boolean, loaded: boolean }} run */
async function poll(run) {
  while (!run.stopped) {
    const answer = await admin(`/admin/sales/${run.saleId}/stats`);
    if (run.stopped) return;
    if (answer.status === 200) {
      render(answer.body);
      if (answer.body.sale.queue?.mode !== "off") await renderQueue(run.saleId);
      $("queue-panel").hidden = answer.body.sale.queue?.mode === "off";
      // The edit form loads the sale once per watch (and on Reload); later reads only rebase it.
      if (!run.loaded) loadEditForm(answer.body.sale);
      else sawSale(answer.body.sale);
      run.loaded = true;
      if ($("live-status").dataset.tone === "wait") say("live-status", "");
    } else if (answer.status === 404 || answer.status === 400) {
      $("live-name").textContent = "no such sale";
      say("live-status", `There is no sale ${run.saleId}.`, "bad");
      return;
    } else if (answer.status !== 401) {
      say("live-status", `The figures cannot be read right now (${answer.message}); retrying.`, "wait");
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(STATS_POLL_MS, answer.retryAfterMs)));
  }
}

/** A queued sale's waiting room: who joined, who was let in, the passes, the seed once revealed. @param {string} saleId */
async function renderQueue(saleId) {
  const answer = await admin(`/admin/sales/${saleId}/queue`);
  if (answer.status !== 200) return;
  const q = answer.body;
  /** @type {[string, string][]} */
  const figures = [
    ["Mode", q.queue.mode],
    ["Joined", String(q.joined)],
    ["Waiting", String(q.waiting)],
    ["Let in (places 1 to)", String(q.admitted)],
    ["Passes used", String(q.passesUsed)],
    ["Passes expired", String(q.passesExpired)],
    ["Seed commitment (SHA-256)", q.queue.seedCommitment ?? "–"],
    ["Seed (revealed once the sale ends)", q.queue.seed ?? "not yet"],
  ];
  $("queue-rows").replaceChildren(
    ...figures.map(([name, value]) =>
      row([
        [name, ""],
        [value, "n"],
      ]),
    ),
  );
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
            [code === "OK" ? "OK (accepted)" : code, seriesClass(code)],
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
  $("tile-health").textContent = String(health.state ?? "–");
  $("health-detail").textContent = [
    health.rebuiltAt ? `rebuilt ${new Date(health.rebuiltAt).toLocaleTimeString()} (${health.rebuilds}×)` : "",
    health.failedByRollback > 0 ? `${health.failedByRollback} orders failed by the rollback` : "",
  ]
    .filter(Boolean)
    .join("; ");

  const oversold = Number(report.oversold) || 0;
  $("tile-verdict").textContent = oversold > 0 ? "oversold" : report.reconciled ? "reconciled" : "not reconciled";
  $("verdict").textContent =
    oversold > 0
      ? `Oversold by ${oversold}.`
      : report.reconciled
        ? "Reconciled: every order Redis minted is accounted for in D1 or pending, and stock adds up."
        : "Not reconciled: Redis and D1 disagree; every figure is below.";
  // Big keys: Upstash refuses writes to a key past REDIS_MAX_RECORD_BYTES; past half, the report warns.
  const largest = report.largestKey;
  $("largest-key").textContent = largest
    ? `Largest Redis key: ${largest.key}, ${(largest.bytes / 2 ** 20).toFixed(2)} MiB, ${(largest.share * 100).toFixed(1)}% of the record limit.${(report.warnings ?? []).map((/** @type {string} */ w) => ` Warning: ${w}.`).join("")}`
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
      sawSale(sale);
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
// Editing: PATCH with If-Match on the version the form loaded. Only changed fields are sent.

/** @type {any} the sale as the edit form loaded it (its version is what If-Match names) */
let editing;
/** An edit answered 503: recorded in D1, finished by sending it again. @type {string | undefined} */
let unfinishedEdit;

/** @param {string} id */
const field = (id) => /** @type {HTMLInputElement} */ ($(id));

/** The fields the form edits, as the API writes them. @param {any} sale */
const editable = (sale) => ({
  name: sale.name,
  description: sale.description ?? "",
  imageUrl: sale.imageUrl ?? null,
  stock: sale.stock,
  startsAt: Date.parse(sale.startsAt),
  endsAt: Date.parse(sale.endsAt),
  admission: { rate: sale.admission?.rate, burst: sale.admission?.burst },
  humanCheck: Boolean(sale.humanCheck),
  variants: hasVariants(sale) ? variantLines(sale.variants) : "",
});

/** Whether two reads of a sale agree on every field the form edits. @param {any} a @param {any} b */
const sameEditable = (a, b) => JSON.stringify(editable(a)) === JSON.stringify(editable(b));

/** @param {any} sale */
function loadEditForm(sale) {
  editing = sale;
  unfinishedEdit = undefined;
  field("edit-name").value = sale.name;
  field("edit-description").value = sale.description ?? "";
  field("edit-image").value = sale.imageUrl ?? "";
  field("edit-stock").value = String(sale.stock);
  $("edit-variants-field").hidden = !hasVariants(sale);
  field("edit-variants").value = hasVariants(sale) ? variantLines(sale.variants) : "";
  field("edit-starts").value = localInput(Date.parse(sale.startsAt));
  field("edit-ends").value = localInput(Date.parse(sale.endsAt));
  field("edit-rate").value = String(sale.admission?.rate ?? "");
  field("edit-burst").value = String(sale.admission?.burst ?? "");
  field("edit-human-check").checked = Boolean(sale.humanCheck);
  renderEditLimits();
}

/**
 * A newer read of the sale being edited: when only what the form does not edit moved (its
 * state, its remaining stock), the form takes the new version, so the admin's own pause does
 * not make the next save a conflict. When an edited field moved, the loaded version stays and
 * saving answers 412: someone else's change is never overwritten unseen.
 * @param {any} sale
 */
function sawSale(sale) {
  if (!editing || editing.id !== sale.id || sale.version === editing.version) return;
  if (sameEditable(editing, sale)) {
    editing = sale;
    renderEditLimits();
  }
}

/** What the sale's state allows to change now. */
function renderEditLimits() {
  $("edit-version").textContent = String(editing.version);
  const started = Date.now() >= Date.parse(editing.startsAt);
  const closed = editing.status === "ended" || editing.status === "cancelled";
  /** @type {HTMLFieldSetElement} */ ($("edit-before-start")).disabled = started;
  $("edit-before-start-hint").textContent = started
    ? "The sale has started: its window, admission and human check are fixed."
    : "These change only until the sale starts.";
  field("edit-stock").min = String(editing.stock);
  // A sale in variants changes its stock variant by variant.
  field("edit-stock").disabled = closed || hasVariants(editing);
  field("edit-variants").disabled = closed;
  $("edit-stock-hint").textContent = closed
    ? "The sale is over: its stock is fixed."
    : `At least ${editing.stock}: units can be added, never taken away.`;
}

/** The fields that differ from the loaded sale, as PATCH takes them. */
function editBody() {
  /** @type {Record<string, unknown>} */
  const body = {};
  const name = field("edit-name").value.trim();
  if (name !== editing.name) body.name = name;
  const description = field("edit-description").value.trim();
  if (description !== (editing.description ?? "")) body.description = description;
  const imageUrl = field("edit-image").value.trim() || null;
  if (imageUrl !== (editing.imageUrl ?? null)) body.imageUrl = imageUrl;
  if (!field("edit-stock").disabled) {
    const stock = Number(field("edit-stock").value);
    if (stock !== editing.stock) body.stock = stock;
  }
  if (hasVariants(editing) && !field("edit-variants").disabled) {
    // Only the lines that changed or are new: a variant not listed stays as it is.
    const before = new Map(editing.variants.map((/** @type {any} */ v) => [v.id, v]));
    const changed = parseVariants(field("edit-variants").value).filter((v) => {
      const was = before.get(v.id);
      return !was || was.label !== v.label || was.stock !== v.stock || (v.price !== undefined && v.price !== was.price);
    });
    if (changed.length > 0) body.variants = changed;
  }
  if (!(/** @type {HTMLFieldSetElement} */ ($("edit-before-start")).disabled)) {
    // datetime-local holds minutes: a field sent only when its minutes changed.
    for (const [id, key] of [
      ["edit-starts", "startsAt"],
      ["edit-ends", "endsAt"],
    ]) {
      if (field(id).value !== localInput(Date.parse(editing[key]))) body[key] = new Date(field(id).value).toISOString();
    }
    const admission = { rate: Number(field("edit-rate").value), burst: Number(field("edit-burst").value) };
    if (admission.rate !== editing.admission?.rate || admission.burst !== editing.admission?.burst) body.admission = admission;
    const humanCheck = field("edit-human-check").checked;
    if (humanCheck !== Boolean(editing.humanCheck)) body.humanCheck = humanCheck;
  }
  return body;
}

/** Whether `sale` already holds every field of `body` (an edit recorded before a 503). @param {any} sale @param {Record<string, any>} body */
function holds(sale, body) {
  const now = editable(sale);
  return Object.entries(body).every(([key, value]) => {
    const wanted = key === "startsAt" || key === "endsAt" ? Date.parse(value) : value;
    return JSON.stringify(now[/** @type {keyof typeof now} */ (key)]) === JSON.stringify(wanted);
  });
}

/** Edit refusals in words; others show the server's message. */
const EDIT_REFUSALS = /** @type {Record<string, string>} */ ({
  SALE_STARTED: "The sale has started: its window, admission and human check can no longer change.",
  SALE_CLOSED: "The sale is over: its stock can no longer change.",
});

$("edit-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const saleId = watching?.saleId;
  if (!saleId || !editing) return;
  const body = editBody();
  if (Object.keys(body).length === 0) return say("edit-status", "Nothing to save: no field changed.");
  say("edit-status", "Saving…", "wait");
  let version = editing.version;
  let answer = await patch(saleId, body, version);
  if (answer.status === 412 && unfinishedEdit === JSON.stringify(body)) {
    // The same edit after a 503: it is in D1 already (that is why the version moved) when the
    // sale holds every field of it; sending it on that version finishes it.
    const current = await admin(`/admin/sales/${saleId}/stats`);
    if (current.status === 200 && holds(current.body.sale, body)) {
      version = current.body.sale.version;
      answer = await patch(saleId, body, version);
    }
  }
  if (watching?.saleId !== saleId) return;
  unfinishedEdit = undefined;
  if (answer.status === 200) {
    loadEditForm(answer.body);
    say("edit-status", `Saved: ${Object.keys(body).map(words).join(", ")} changed (version ${answer.body.version}).`, "good");
    void salesList.reload();
  } else if (answer.status === 412) {
    say(
      "edit-status",
      "The sale changed since you loaded it: reload it (your changes here are replaced), then edit again.",
      "bad",
    );
  } else if (answer.status === 503) {
    unfinishedEdit = JSON.stringify(body);
    say("edit-status", `Recorded, but not yet in force everywhere (${answer.message}). Press Save again to finish.`, "bad");
  } else if (answer.status === 0) {
    say("edit-status", "The server did not answer. Press Save again.", "bad");
  } else if (answer.status !== 401) {
    say("edit-status", EDIT_REFUSALS[answer.code] ?? `Not saved: ${answer.message}`, "bad");
  }
});

/** @param {string} saleId @param {Record<string, unknown>} body @param {number} version */
const patch = (saleId, body, version) =>
  admin(`/admin/sales/${saleId}`, { method: "PATCH", body, headers: { "If-Match": `"${version}"` } });

$("edit-reload").addEventListener("click", async () => {
  const saleId = watching?.saleId;
  if (!saleId) return;
  const answer = await admin(`/admin/sales/${saleId}/stats`);
  if (watching?.saleId !== saleId) return;
  if (answer.status === 200) {
    loadEditForm(answer.body.sale);
    say("edit-status", `Reloaded: version ${answer.body.sale.version}.`, "good");
  } else if (answer.status !== 401) {
    say("edit-status", `The sale cannot be read right now (${answer.message}).`, "bad");
  }
});

// ---------------------------------------------------------------------------------------
// Deny rules: callers refused quietly (GET, POST /admin/deny-rules, DELETE /admin/deny-rules/:id).

/** @param {any} rule */
function denyRow(rule) {
  const remove = document.createElement("button");
  remove.type = "button";
  remove.textContent = "Remove";
  remove.setAttribute("aria-label", `Remove the rule on ${rule.kind} ${rule.value}`);
  remove.addEventListener("click", async () => {
    const answer = await admin(`/admin/deny-rules/${rule.id}`, { method: "DELETE" });
    if (answer.status === 200) {
      renderDenyRules(answer.body.rules);
      say("deny-status", `Removed the rule on ${rule.kind} ${rule.value}.`, "good");
    } else if (answer.status !== 401) {
      say("deny-status", `Not removed: ${answer.message}`, "bad");
    }
  });
  const expires = rule.expiresAt ? new Date(rule.expiresAt).toLocaleString() : "never";
  const tr = row([rule.kind, rule.value, rule.note, expires].map((text) => [text, ""]));
  const td = document.createElement("td");
  td.append(remove);
  tr.append(td);
  return tr;
}

/** @param {any[]} rules */
function renderDenyRules(rules) {
  $("deny-rows").replaceChildren(...rules.map(denyRow));
  if (rules.length === 0) $("deny-rows").append(row([["No deny rules.", ""]], 5));
}

async function loadDenyRules() {
  const answer = await admin("/admin/deny-rules");
  if (answer.status === 200) renderDenyRules(answer.body.rules);
  else if (answer.status !== 401) say("deny-status", `The deny rules cannot be read right now (${answer.message}).`, "bad");
}

$("deny-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = /** @type {HTMLFormElement} */ (event.target);
  const data = new FormData(form);
  const text = (/** @type {string} */ name) => String(data.get(name) ?? "").trim();
  /** @type {Record<string, unknown>} */
  const body = { kind: text("kind"), value: text("value") };
  if (text("note")) body.note = text("note");
  if (text("expiresAt")) body.expiresAt = new Date(text("expiresAt")).toISOString();
  const answer = await admin("/admin/deny-rules", { method: "POST", body });
  if (answer.status === 201) {
    say("deny-status", `Added: ${answer.body.kind} ${answer.body.value}.`, "good");
    form.reset();
    await loadDenyRules();
  } else if (answer.status !== 401) {
    say("deny-status", `Not added: ${answer.message}`, "bad");
  }
});
