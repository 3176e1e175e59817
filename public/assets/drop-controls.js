// @ts-check
// The watched sale's live controls during a drop (docs/operating-a-drop.md): its waiting room
// (counts, the pace it measured, its hold, the operators' log) with pause and resume of
// admission and its rate; a live sale put behind a waiting room; the notice on the sale's
// pages. Each answer is the sale's queue view, which this draws. A change the server recorded
// but Redis has not applied yet (Redis unreachable) shows as pending until it has: it gets
// there by itself, nobody presses again. admin.js hands in its admin caller and the sale watched.
import { $, row, say } from "./lib/console-page.js";
import { formatMoment } from "./lib/format.js";

/** @typedef {import("./order-events.js").AdminCall} AdminCall */

/** The waiting room's modes, as the create form offers them. */
const QUEUE_MODES = /** @type {Record<string, string>} */ ({ fifo: "first come, first served", random: "a fair draw" });

/** What each logged action did, in words. @param {any} a */
function actionInWords(a) {
  switch (a.action) {
    case "pause-admission":
      return `paused admission${a.message ? `, notice "${a.message}"` : ""}`;
    case "resume-admission":
      return `resumed admission${a.message ? `, notice "${a.message}"` : ""}`;
    case "admission-rate":
      return `set the rate to ${a.admitPerSec} a second`;
    case "queue-enabled":
      return "put the sale behind a waiting room";
    case "notice":
      return a.message ? `showed the notice "${a.message}"` : "took the notice down";
    default:
      return String(a.action);
  }
}

/** A count, or a dash while Redis cannot be read. @param {number | null} n */
const count = (n) => (n === null ? "– (Redis cannot be read)" : String(n));

/**
 * @param {AdminCall} admin the console's admin caller (it locks the console on a 401)
 * @param {{ watched: () => string | undefined, pending: (pending: boolean) => void }} page
 */
export function dropControls(admin, page) {
  /** The rate field keeps what the operator is typing: it is filled from the sale only when it changes. */
  let shownRate = 0;

  /** @param {any} q the sale's queue view */
  function render(q) {
    page.pending(q.syncPending);
    $("queue-off").hidden = q.queue.mode !== "off";
    $("queue-on").hidden = q.queue.mode === "off";
    setNotice(q.notice);
    if (q.queue.mode === "off") {
      $("queue-rows").replaceChildren();
    } else {
      const rate = /** @type {HTMLInputElement} */ ($("rate-input"));
      if (shownRate !== q.queue.admitPerSec) {
        rate.value = String(q.queue.admitPerSec);
        shownRate = q.queue.admitPerSec;
      }
      /** @type {[string, string][]} */
      const figures = [
        ["Mode", QUEUE_MODES[q.queue.mode] ?? q.queue.mode],
        ["Admission", q.paused ? "paused by an operator: nobody is let in, every place is kept" : "letting people in"],
        [
          "Let in per second, last minute",
          q.admittedPerSec === null ? "–" : `${q.admittedPerSec} (at most ${q.queue.admitPerSec})`,
        ],
        ["Joined", count(q.joined)],
        ["Waiting", count(q.waiting)],
        ["Let in (places 1 to)", count(q.admitted)],
        ["Passes used", count(q.passesUsed)],
        ["No-shows (let in, not bought within the grace)", count(q.noShows)],
        ["Passes expired", count(q.passesExpired)],
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
    $("action-rows").replaceChildren(
      ...(q.actions.length === 0
        ? [row([["No operator has acted on this sale yet.", ""]], 3)]
        : q.actions.map((/** @type {any} */ a) =>
            row([
              [formatMoment(a.at), "num"],
              [actionInWords(a), ""],
              [a.admin, ""],
            ]),
          )),
    );
  }

  /** @param {string | null} notice */
  function setNotice(notice) {
    $("notice-shown").textContent = notice ? `Shown now: "${notice}"` : "No notice is shown.";
  }

  /**
   * Sends one control and draws its answer; says what it did, or why not.
   * @param {string} statusId @param {string} path @param {{ method: string, body?: unknown }} request @param {string} done
   */
  async function act(statusId, path, request, done) {
    const saleId = page.watched();
    if (!saleId) return;
    say(statusId, "Sending…", "wait");
    const answer = await admin(`/admin/sales/${saleId}${path}`, request);
    if (page.watched() !== saleId) return;
    if (answer.status === 200) {
      render(answer.body);
      say(
        statusId,
        answer.body.syncPending
          ? `${done}: recorded, and on its way to the live stock store (it cannot be reached right now; it gets there by itself).`
          : `${done}.`,
        answer.body.syncPending ? "wait" : "good",
      );
    } else if (answer.status === 0) {
      say(statusId, "The server did not answer. Try again: sending it again is safe.", "bad");
    } else if (answer.status !== 401) {
      say(statusId, `Not done: ${answer.message}`, "bad");
    }
  }

  for (const button of document.querySelectorAll("[data-admission]")) {
    button.addEventListener("click", () => {
      const action = /** @type {HTMLElement} */ (button).dataset.admission;
      void act(
        "queue-status",
        `/queue/${action}`,
        { method: "POST" },
        action === "pause" ? "Admission paused" : "Admission resumed",
      );
    });
  }

  $("rate-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const admitPerSec = Number(/** @type {HTMLInputElement} */ ($("rate-input")).value);
    void act("queue-status", "/queue", { method: "PATCH", body: { admitPerSec } }, `The rate is ${admitPerSec} a second`);
  });

  $("queue-enable").addEventListener("click", () => {
    const saleId = page.watched();
    if (!saleId) return;
    if (!confirm(`Put sale ${saleId} behind a waiting room now? From then on buyers join a line and buy on their turn.`)) return;
    void act("queue-status", "/queue/enable", { method: "POST" }, "The sale is behind a waiting room");
  });

  $("notice-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const message = /** @type {HTMLInputElement} */ ($("notice-text")).value.trim();
    void act("notice-status", "/notice", { method: "PUT", body: { message } }, "The notice is shown");
  });

  $("notice-clear").addEventListener("click", () => {
    void act("notice-status", "/notice", { method: "PUT", body: { message: null } }, "The notice is down");
  });

  return {
    /**
     * The watched sale as the console's poll read it: its notice, and its waiting room read
     * again (a draw has none; a sale without one may be put behind one).
     * @param {any} sale
     */
    async sawSale(sale) {
      setNotice(sale.notice);
      $("queue-panel").hidden = Boolean(sale.draw);
      if (sale.draw) return;
      if (sale.queue.mode === "off") {
        $("queue-off").hidden = false;
        $("queue-on").hidden = true;
        $("queue-rows").replaceChildren();
        return;
      }
      const answer = await admin(`/admin/sales/${sale.id}/queue`);
      if (answer.status === 200 && page.watched() === sale.id) render(answer.body);
    },
    /** Another sale watched, or the console locked: nothing of the last one stays. */
    forget() {
      shownRate = 0;
      for (const id of ["queue-rows", "action-rows"]) $(id).replaceChildren();
      for (const id of ["queue-status", "notice-status"]) say(id, "");
      $("notice-shown").textContent = "";
      /** @type {HTMLInputElement} */ ($("notice-text")).value = "";
    },
  };
}
