// @ts-check
// The console's Draw section (/admin/#draw), for a watched sale sold by draw (docs/draws.md):
// from its public view (GET /api/sales/:id/draw, read every 2 s; the server caches it a
// second) the entries per variant while entries are open, what the draw is bound to (the
// seed's commitment, the entries root, the beacon's round and randomness, the seed once
// drawn), where its run stands, the results per variant and, with presale lanes, each lane's
// draw: when its winners are offered their orders and its allotment; "Run the draw now" after the
// close (POST /admin/sales/:id/draw; the cron runs it within a minute anyway), and the results
// as a CSV file: the committed list with each entry's result, gathered a page at a time
// (GET /api/sales/:id/draw/entries) and saved by the browser.
import { call } from "./lib/api.js";
import { $, factItems, row, saveFile, say } from "./lib/console-page.js";
import { formatMoment, formatTime, words } from "./lib/format.js";

const POLL_MS = 2000;

/** @typedef {import("./order-events.js").AdminCall} AdminCall */

/** Where the run stands, in words: the view names its state, the rest tells which step is on. @param {any} view */
function progress(view) {
  switch (view.state) {
    case "upcoming":
      return `Entries open at ${formatTime(view.opensAt)}.`;
    case "open":
      return `Entries open until ${formatTime(view.closesAt)}.`;
    case "closed":
      return `Entries closed at ${formatTime(view.closesAt)}; the draw starts within a minute, or now with Run the draw now.`;
    case "drawing":
      if (!view.entriesRoot) return "Drawing: sealing the entries and committing them to their root.";
      if (view.beacon && !view.beacon.randomness) return `Drawing: waiting for beacon round ${view.beacon.round}.`;
      return "Drawing: shuffling the entries and selecting the winners.";
    case "drawn":
      return `Drawn at ${formatTime(view.drawnAt)}.`;
    default:
      return "";
  }
}

/** What the draw is bound to, each once it exists. @param {any} view @returns {[string, string][]} */
function commitment(view) {
  const beacon = view.beacon
    ? [
        ["Beacon", `${view.beacon.url}, round ${view.beacon.round}`],
        ["Beacon randomness", view.beacon.randomness ?? "not read yet: it is published after the close"],
      ]
    : [["Beacon", "none: the draw uses the seed alone"]];
  return /** @type {[string, string][]} */ ([
    ["Seed commitment (SHA-256 of the seed, from the creation)", view.seedCommitment ?? "–"],
    ["Entries root (Merkle root of the entries)", view.entriesRoot ?? "at the close"],
    ["Committed", view.committedAt ? formatMoment(view.committedAt) : "at the close"],
    ...beacon,
    ["Seed", view.seed ?? "revealed once drawn"],
    ["Drawn", view.drawnAt ? formatMoment(view.drawnAt) : "not yet"],
  ]);
}

/** A lane's draw: when its winners are offered their orders, its allotment in all and per variant. @param {any} sale @param {any} lane */
function laneRow(sale, lane) {
  const label = (/** @type {string} */ id) => sale.variants.find((/** @type {any} */ v) => v.id === id)?.label ?? id;
  const perVariant = Object.entries(lane.variants ?? {}).map(([id, units]) => `${label(id)} ${units}`);
  return row([
    [lane.name, ""],
    [formatTime(lane.startsAt), ""],
    [lane.stock === null ? "no cap of its own" : String(lane.stock), "n"],
    [perVariant.length > 0 ? perVariant.join(", ") : "–", ""],
  ]);
}

/**
 * The committed list as CSV: every value is a number, lowercase hex, a variant id (letters,
 * digits, . _ -) or a lane's name (a-z, 0-9, -), so none is quoted. A sale with lanes adds each
 * entry's lane before its result (empty: the public draw).
 * @param {boolean} lanes
 */
const csvHeader = (lanes) => `index,leafHash,entrant,variant,quantity,${lanes ? "lane," : ""}result`;
/** @param {boolean} lanes @returns {(leaf: any) => string} */
const csvLine = (lanes) => (leaf) =>
  [
    leaf.index,
    leaf.leafHash,
    leaf.entrant,
    leaf.variant,
    leaf.quantity,
    ...(lanes ? [leaf.lane ?? ""] : []),
    leaf.result ?? "",
  ].join(",");

/**
 * The Draw section.
 * @param {AdminCall} admin the console's admin caller (it locks the console on a 401)
 */
export function drawPanel(admin) {
  /**
   * The draw shown: its sale (labels of its variants), its view as last read, and whether the
   * owner started its run here (the status line then says when it is done).
   * @typedef {{ saleId: string, sale: any, view: any, stopped: boolean, started: boolean }} ShownDraw
   */
  /** @type {ShownDraw | undefined} */
  let shown;

  /** @param {ShownDraw} draw */
  async function poll(draw) {
    while (!draw.stopped) {
      const answer = await call("", `/api/sales/${draw.saleId}/draw`);
      if (draw.stopped) return;
      if (answer.status === 200) {
        draw.view = answer.body;
        render(draw);
      } else {
        say("draw-status", `The draw cannot be read right now (${answer.message}); retrying.`, "wait");
      }
      await new Promise((resolve) => setTimeout(resolve, Math.max(POLL_MS, answer.retryAfterMs)));
    }
  }

  /** @param {ShownDraw} draw */
  function render(draw) {
    const { sale, view } = draw;
    $("draw-state").dataset.state = view.state;
    $("draw-state").textContent = words(view.state);
    $("draw-progress").textContent = progress(view);
    const drawn = view.state === "drawn";
    const sum = (/** @type {string} */ field) =>
      view.variants.reduce((/** @type {number} */ n, /** @type {any} */ v) => n + v[field], 0);
    $("draw-entries").textContent = String(view.entries);
    $("draw-selected").textContent = drawn ? String(sum("selected")) : "–";
    $("draw-waitlisted").textContent = drawn ? String(sum("waitlisted")) : "–";
    $("draw-variant-rows").replaceChildren(
      ...view.variants.map((/** @type {any} */ v) => {
        const label = sale.variants.find((/** @type {any} */ s) => s.id === v.id)?.label;
        return row([
          [v.id === "default" ? "All units" : `${label ?? v.id} (${v.id})`, ""],
          [String(v.stock), "n"],
          [String(v.entries), "n"],
          [drawn ? String(v.selected) : "–", "n"],
          [drawn ? String(v.waitlisted) : "–", "n"],
        ]);
      }),
    );
    $("draw-lanes").hidden = view.lanes.length === 0;
    $("draw-lane-rows").replaceChildren(...view.lanes.map((/** @type {any} */ lane) => laneRow(sale, lane)));
    $("draw-commitment").replaceChildren(...factItems(commitment(view)));
    const runWhy =
      view.state === "upcoming" || view.state === "open"
        ? `The draw can run once entries close, at ${formatTime(view.closesAt)}.`
        : drawn
          ? "The draw is done."
          : "";
    $("draw-run").setAttribute("aria-disabled", String(runWhy !== ""));
    $("draw-run-note").textContent = runWhy;
    const exportWhy = view.entriesRoot ? "" : "The results can be downloaded once the entries are committed, at the close.";
    $("draw-export").setAttribute("aria-disabled", String(exportWhy !== ""));
    $("draw-export-note").textContent = exportWhy;
    $("draw-updated").textContent = new Date().toLocaleTimeString();
    if (draw.started && drawn) {
      draw.started = false;
      say("draw-status", "Drawn: the results per variant are above.", "good");
    } else if ($("draw-status").dataset.tone === "wait") {
      say("draw-status", "");
    }
  }

  $("draw-run").addEventListener("click", async () => {
    const draw = shown;
    if (!draw || $("draw-run").getAttribute("aria-disabled") === "true") return;
    say("draw-status", "Starting the draw…", "wait");
    const answer = await admin(`/admin/sales/${draw.saleId}/draw`, { method: "POST" });
    if (shown !== draw) return;
    if (answer.status === 202) {
      draw.view = answer.body;
      draw.started = true;
      say("draw-status", "The draw is running: its progress shows above.", "good");
      render(draw);
    } else if (answer.code === "DRAW_NOT_CLOSED") {
      say("draw-status", "Entries are still open: the draw can run once they close.", "bad");
    } else if (answer.status !== 401) {
      say("draw-status", `The draw did not start: ${answer.message}`, "bad");
    }
  });

  $("draw-export").addEventListener("click", async () => {
    const draw = shown;
    if (!draw || $("draw-export").getAttribute("aria-disabled") === "true") return;
    say("draw-status", "Gathering the entries…", "wait");
    const lanes = (draw.view?.lanes ?? []).length > 0;
    const lines = [csvHeader(lanes)];
    /** @type {string | null} */
    let cursor = "0";
    while (cursor !== null) {
      const answer = await call("", `/api/sales/${draw.saleId}/draw/entries?cursor=${encodeURIComponent(cursor)}`);
      if (shown !== draw) return;
      if (answer.status !== 200) return say("draw-status", `Not downloaded: ${answer.message}`, "bad");
      lines.push(...answer.body.leaves.map(csvLine(lanes)));
      cursor = answer.body.next;
    }
    const filename = `sale-${draw.saleId}-draw.csv`;
    saveFile(new Blob([`${lines.join("\r\n")}\r\n`], { type: "text/csv" }), filename);
    const entries = lines.length - 1;
    say("draw-status", `Downloaded ${filename}: ${entries} ${entries === 1 ? "entry" : "entries"}.`, "good");
  });

  return {
    /**
     * The watched sale as last read: a draw is followed here (from its first read), any other
     * sale leaves the section with its hint.
     * @param {any} sale
     */
    sawSale(sale) {
      if (shown && shown.saleId === sale.id) {
        shown.sale = sale;
        return;
      }
      this.forget();
      $("live-draw").hidden = !sale.draw;
      if (!sale.draw) return;
      shown = { saleId: sale.id, sale, view: undefined, stopped: false, started: false };
      $("draw-none").hidden = true;
      $("watched-draw").hidden = false;
      $("draw-sale-id").textContent = sale.id;
      say("draw-status", "");
      void poll(shown);
    },
    /** No draw on the page (another sale watched, or the console locked). */
    forget() {
      if (shown) shown.stopped = true;
      shown = undefined;
      $("live-draw").hidden = true;
      $("draw-none").hidden = false;
      $("watched-draw").hidden = true;
      $("draw-variant-rows").replaceChildren();
      $("draw-lane-rows").replaceChildren();
      $("draw-commitment").replaceChildren();
    },
  };
}
