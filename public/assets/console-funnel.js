// @ts-check
// The console's Funnel section (/admin/#funnel): what Workers Analytics Engine counted of each
// step (GET /admin/sales/:id/funnel for the watched sale, per second over 15 minutes; GET
// /admin/funnel for every sale over 7 days), as bars (the funnel's shape), a line per step and
// tables with the rates between steps. Read every 5 s, only while the section shows.
import { drawBars, drawChart } from "./lib/chart.js";
import { $, row, say } from "./lib/console-page.js";

const POLL_MS = 5000;
/** The line chart starts this long before the first step counted (and covers this much at least). */
const CHART_LEAD_SECONDS = 60;

/** @typedef {import("./order-events.js").AdminCall} AdminCall */

/** Each step in words, in the order a buyer meets them, with its colour. */
const STEPS = /** @type {const} */ ([
  ["joined", "Joined the waiting room", 3],
  ["turned_away", "Turned away quietly", 7],
  ["admitted", "Admitted", 4],
  ["reserved", "Reserved", 0],
  ["settled", "Settled in D1", 5],
  ["paid", "Paid", 2],
  ["expired", "Expired unpaid", 6],
  ["cancelled", "Cancelled", 1],
  ["returned", "Units returned", 1],
  ["failed", "Failed", 1],
]);

/** Which step each step's rate is taken against: reserved of admitted (or of joined), paid of reserved... */
const RATE_OF = /** @type {Record<string, string>} */ ({
  turned_away: "joined",
  admitted: "joined",
  reserved: "admitted",
  settled: "reserved",
  paid: "settled",
  expired: "settled",
  cancelled: "settled",
  returned: "settled",
  failed: "reserved",
});

/** @param {string} step */
const seriesClass = (step) => `series-${STEPS.find(([s]) => s === step)?.[2] ?? 7}`;
/** @param {string} step */
const stepWords = (step) => STEPS.find(([s]) => s === step)?.[1] ?? step;

/** `n` of `of` as a percentage, or a dash when there is nothing to take it of. @param {number} n @param {number} of */
const rate = (n, of) => (of > 0 ? `${Math.round((100 * n) / of)}%` : "–");

/**
 * A step's rate against the step it follows, where this sale reached that one ("" otherwise).
 * @param {string} step @param {Record<string, number>} totals @param {string[]} shown
 */
function rateAgainst(step, totals, shown) {
  const of = RATE_OF[step];
  return of && shown.includes(of) ? `${rate(totals[step] ?? 0, totals[of] ?? 0)} of ${of.replace("_", " ")}` : "";
}

/**
 * The Funnel section.
 * @param {AdminCall} admin the console's admin caller (it locks the console on a 401)
 */
export function funnelPanel(admin) {
  /** @type {string | undefined} the watched sale */
  let saleId;
  let polling = false;

  /** @param {any} series GET /admin/sales/:id/funnel */
  function renderSale(series) {
    const totals = /** @type {Record<string, number>} */ (series.totals);
    // Only the steps this sale's buyers reached: a sale without a waiting room has no joins.
    const shown = STEPS.map(([step]) => step).filter((step) => totals[step] > 0 || step === "reserved");
    drawBars(
      /** @type {SVGGElement} */ (/** @type {unknown} */ ($("funnel-bars"))),
      shown.map((step) => ({
        label: stepWords(step),
        bars: [{ name: "", value: totals[step] ?? 0, seriesClass: seriesClass(step) }],
      })),
    );
    const bySecond = new Map(series.points.map((/** @type {any} */ p) => [p.at, p.counts]));
    // From shortly before the first step counted: a drop's minutes, not the whole window's quiet.
    const first = series.points[0]?.at ?? series.to;
    drawChart(/** @type {SVGGElement} */ (/** @type {unknown} */ ($("funnel-chart"))), {
      from: Math.max(series.from, Math.min(first - CHART_LEAD_SECONDS, series.to - CHART_LEAD_SECONDS)),
      to: series.to,
      codes: shown,
      perSecond: (step, at) => bySecond.get(at)?.[step] ?? 0,
      seriesClass,
    });
    const recent = (/** @type {string} */ step) =>
      series.points
        .filter((/** @type {any} */ p) => p.at > series.to - 10)
        .reduce((/** @type {number} */ n, /** @type {any} */ p) => n + p.counts[step], 0);
    $("funnel-rows").replaceChildren(
      ...shown.map((step) =>
        row([
          [stepWords(step), seriesClass(step)],
          [String(totals[step] ?? 0), "n"],
          [(recent(step) / 10).toFixed(1), "n"],
          [rateAgainst(step, totals, shown), "n"],
        ]),
      ),
    );
  }

  /** @param {any} funnel GET /admin/funnel */
  function renderSales(funnel) {
    const sales = [...funnel.sales].sort((a, b) => Number(b.saleId) - Number(a.saleId));
    drawBars(
      /** @type {SVGGElement} */ (/** @type {unknown} */ ($("sales-funnel-bars"))),
      sales.map((sale) => ({
        label: `Sale ${sale.saleId}`,
        bars: ["reserved", "paid", "returned"].map((step) => ({
          name: stepWords(step),
          value: sale.counts[step],
          seriesClass: seriesClass(step),
        })),
      })),
    );
    $("sales-funnel-rows").replaceChildren(
      ...(sales.length === 0
        ? [row([["Nothing counted in the last 7 days.", ""]], 9)]
        : sales.map((sale) =>
            row([
              [sale.saleId, "n"],
              ...["joined", "admitted", "reserved", "paid", "expired", "returned", "turned_away"].map(
                (step) => /** @type {[string, string]} */ ([String(sale.counts[step]), "n"]),
              ),
              [rate(sale.counts.paid, sale.counts.reserved), "n"],
            ]),
          )),
    );
  }

  async function refresh() {
    const [one, all] = await Promise.all([
      saleId ? admin(`/admin/sales/${saleId}/funnel`) : Promise.resolve(undefined),
      admin("/admin/funnel"),
    ]);
    const failed = [one, all].find((answer) => answer && answer.status !== 200);
    if (failed) return say("funnel-status", `The funnel cannot be read right now (${failed.message}).`, "bad");
    say("funnel-status", "");
    if (one && one.body.saleId === saleId) renderSale(one.body);
    renderSales(all.body);
  }

  /** Reads while the section shows: once now, then every POLL_MS until it is left. */
  async function follow() {
    if (polling) return;
    polling = true;
    try {
      while (!$("funnel").hidden && !$("console").hidden) {
        await refresh();
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    } finally {
      polling = false;
    }
  }

  // After the console's own listener has shown the section the fragment names.
  window.addEventListener("hashchange", () =>
    setTimeout(() => {
      if (!$("funnel").hidden) void follow();
    }, 0),
  );

  return {
    /** The console is unlocked: follow the funnel if its section is the one shown. */
    start() {
      if (!$("funnel").hidden) void follow();
    },
    /** A sale is watched: its funnel is shown here. @param {string} id */
    watch(id) {
      saleId = id;
      $("funnel-none").hidden = true;
      $("sale-funnel").hidden = false;
      $("funnel-sale-id").textContent = id;
      $("funnel-rows").replaceChildren();
      if (!$("funnel").hidden) void follow();
    },
    /** No sale watched (or the console locked). */
    forget() {
      saleId = undefined;
      $("funnel-none").hidden = false;
      $("sale-funnel").hidden = true;
    },
  };
}
