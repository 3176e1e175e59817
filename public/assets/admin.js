// @ts-check
// The admin console: create a sale, then watch it live from one poll of
// GET /admin/sales/:id/stats every 2 s (outcomes per second, remaining stock, orders by
// state, the reconciliation verdict), and pause, resume or cancel it where the server can.
// The admin token lives in this module's memory only: never in storage, never in the URL.
import { call, idempotencyKey, routeMissing } from "./lib/api.js";
import { drawChart } from "./lib/chart.js";
import { formatTime, words } from "./lib/format.js";

const STATS_POLL_MS = 2000;
const SALE_ID = /^[1-9][0-9]{0,15}$/;
const SERIES_CLASSES = 8;

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** @type {string | undefined} */
let adminToken;
/** @type {{ saleId: string, stopped: boolean } | undefined} */
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

/** @param {string} id @param {string} text @param {"good" | "bad" | "wait" | ""} [tone] */
function say(id, text, tone = "") {
  $(id).textContent = text;
  $(id).dataset.tone = tone;
}

/** @param {string} path @param {{ method?: string, body?: unknown, headers?: Record<string, string> }} [options] */
async function admin(path, options = {}) {
  const answer = await call("", path, { ...options, adminToken });
  if (answer.status === 401) lock("The admin token was refused: enter it again.");
  return answer;
}

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
  void loadKnownSales();
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

/** The request body: required fields, and each optional one only when filled in. */
function saleBody(/** @type {HTMLFormElement} */ form) {
  const data = new FormData(form);
  const text = (/** @type {string} */ name) => String(data.get(name) ?? "").trim();
  /** @type {Record<string, unknown>} */
  const body = {
    name: text("name"),
    stock: Number(text("stock")),
    startsAt: new Date(text("startsAt")).toISOString(),
    endsAt: new Date(text("endsAt")).toISOString(),
  };
  if (text("rate") || text("burst")) body.admission = { rate: Number(text("rate")), burst: Number(text("burst")) };
  for (const name of ["price", "paymentWindowSec", "perUserLimit"]) if (text(name)) body[name] = Number(text(name));
  for (const name of ["currency", "imageUrl", "description"]) if (text(name)) body[name] = text(name);
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
    addKnownSale(sale);
    watch(sale.id);
    $("live-title").focus();
  } else if (answer.status === 0 || answer.status === 503) {
    say("create-status", "The server did not answer. Press Create again: the same request never creates two sales.", "bad");
  } else if (answer.status !== 401) {
    say("create-status", `Not created: ${answer.message}`, "bad");
  }
});

// ---------------------------------------------------------------------------------------
// Known sales, for the sale number field

/** @param {{ id: string, name: string }} sale */
function addKnownSale(sale) {
  const list = $("known-sales");
  if ([...list.children].some((o) => /** @type {HTMLOptionElement} */ (o).value === sale.id)) return;
  list.append(new Option(sale.name, sale.id));
}

async function loadKnownSales() {
  const answer = await call("", "/api/sales");
  if (answer.status === 200) for (const sale of answer.body.sales ?? []) addKnownSale(sale);
  // A server without the catalog route answers 404: the field still takes any number.
}

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
  const run = { saleId, stopped: false };
  watching = run;
  /** @type {HTMLInputElement} */ ($("watch-id")).value = saleId;
  $("live").hidden = false;
  $("live-id").textContent = saleId;
  $("live-name").textContent = "…";
  /** @type {HTMLAnchorElement} */ ($("live-storefront")).href = `/?sale=${saleId}`;
  say("live-status", "");
  void poll(run);
}

/** @param {{ saleId: string, stopped: boolean }} run */
async function poll(run) {
  while (!run.stopped) {
    const answer = await admin(`/admin/sales/${run.saleId}/stats`);
    if (run.stopped) return;
    if (answer.status === 200) {
      render(answer.body);
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

/**
 * @param {{ sale: any, series: { from: number, to: number, points: { at: number, counts: Record<string, number> }[] }, report: any }} stats
 */
function render({ sale, series, report }) {
  $("live-name").textContent = sale.name;
  $("live-state").dataset.state = sale.status;
  $("live-state").textContent = words(sale.status);
  $("live-window").textContent = `${formatTime(sale.startsAt)} to ${formatTime(sale.endsAt)}`;
  $("tile-remaining").textContent = String(sale.remaining);
  $("tile-stock").textContent = String(sale.stock);

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

  const oversold = Number(report.oversold) || 0;
  $("tile-verdict").textContent = oversold > 0 ? "oversold" : report.reconciled ? "reconciled" : "not reconciled";
  $("verdict").textContent =
    oversold > 0
      ? `Oversold by ${oversold}.`
      : report.reconciled
        ? "Reconciled: every order Redis minted is accounted for in D1 or pending, and stock adds up."
        : "Not reconciled: Redis and D1 disagree; every figure is below.";
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

/**
 * A table row; a cell's second part is its class (a series class gets a colour swatch).
 * @param {[string, string][]} cells
 * @param {number} [span]
 */
function row(cells, span) {
  const tr = document.createElement("tr");
  for (const [text, kind] of cells) {
    const td = document.createElement("td");
    if (span) td.colSpan = span;
    if (kind.startsWith("series-")) {
      const swatch = document.createElement("span");
      swatch.className = `swatch ${kind}`;
      td.append(swatch);
    } else if (kind) {
      td.className = kind;
    }
    td.append(text);
    tr.append(td);
  }
  return tr;
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
// Operations

for (const button of document.querySelectorAll("[data-operation]")) {
  button.addEventListener("click", async () => {
    const operation = /** @type {HTMLElement} */ (button).dataset.operation ?? "";
    const saleId = watching?.saleId;
    if (!saleId) return;
    if (operation === "cancel" && !confirm(`Cancel sale ${saleId}? Buyers can no longer check out.`)) return;
    const answer = await admin(`/admin/sales/${saleId}/${operation}`, { method: "POST" });
    if (answer.status === 200) say("live-status", `Sale ${saleId}: ${operation} done.`, "good");
    else if (routeMissing(answer)) say("live-status", `This server cannot ${operation} sales yet.`, "bad");
    else if (answer.status !== 401) say("live-status", `Not done: ${answer.message}`, "bad");
  });
}
