// @ts-check
// A queued sale's waiting room on the sale page: join the line, follow the place as the line
// moves (polling when the server says to), and hold the pass once admitted. The pass goes with
// the checkout as Queue-Pass; Buy stays closed until then. A sale with the human check asks
// for it at the join (Human-Check), and the pass carries it to checkout.
import { call, jitterMs, serverNow, sleep } from "./lib/api.js";
import { formatDuration } from "./lib/format.js";

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** What a state of the line means to the buyer. */
const STATES = /** @type {Record<string, string>} */ ({
  waiting: "You are in line. Keep this page open: Buy opens on your turn.",
  sold_out: "Sold out: no unit is left for a place not yet let in.",
  closed: "Nothing more will come of this place: the sale is over, or your pass was used or ran out.",
});

export class WaitingRoom {
  stopped = false;
  /** @type {string | undefined} */
  ticket;
  /** @type {any} the last standing the poll answered */
  position;
  /** @type {string | undefined} */
  pass;
  passExpiresAt = 0;
  polling = false;

  /**
   * @param {string} api the API's origin
   * @param {string} saleId
   * @param {{ token: () => string, userId: () => string, say: (text: string, tone?: "good" | "bad" | "wait" | "") => void, changed: () => void, humanCheck: () => { needed: boolean, token: string | undefined, reset: () => void } }} page
   */
  constructor(api, saleId, page) {
    this.api = api;
    this.saleId = saleId;
    this.page = page;
    $("queue").hidden = false;
    $("queue-join").onclick = () => void this.join();
    // A reload keeps the buyer's ticket (it is theirs: the server refuses it to anyone else).
    this.ticket = sessionStorage.getItem(this.storageKey()) ?? undefined;
    if (this.ticket) void this.follow();
  }

  storageKey() {
    return `flash-sale:queue:${this.saleId}:${this.page.userId()}`;
  }

  stop() {
    this.stopped = true;
  }

  /** Whether Buy may be pressed: the pass is held and has time left. */
  admitted() {
    return this.pass !== undefined && this.passExpiresAt > serverNow();
  }

  async join() {
    if (!this.page.token()) return this.page.say("Sign in above to join the line.", "bad");
    const check = this.page.humanCheck();
    if (check.needed && !check.token) return this.page.say("Complete the human check on this page first.", "bad");
    const answer = await call(this.api, `/api/sales/${this.saleId}/queue`, {
      method: "POST",
      token: this.page.token(),
      headers: check.token ? { "Human-Check": check.token } : {},
    });
    // A token passes once: a join that did not take it asks for a fresh check.
    if (check.token) check.reset();
    if (answer.status === 200) {
      this.ticket = answer.body.ticket;
      sessionStorage.setItem(this.storageKey(), answer.body.ticket);
      this.page.say(
        answer.body.place === null
          ? "You are in the line: places are drawn when the sale starts."
          : `You are in line at place ${answer.body.place}.`,
        "good",
      );
      void this.follow();
      return;
    }
    if (answer.code === "QUEUE_NOT_OPEN")
      return this.page.say("The line is not open yet: it opens when the countdown ends.", "wait");
    this.page.say(`Could not join the line: ${answer.message}`, "bad");
  }

  /** Polls the place until the pass arrives or nothing more will come. */
  async follow() {
    if (this.polling) return;
    this.polling = true;
    try {
      while (!this.stopped && this.ticket) {
        const answer = await call(this.api, `/api/sales/${this.saleId}/queue`, {
          token: this.page.token(),
          headers: { "Queue-Ticket": this.ticket },
        });
        if (this.stopped) return;
        if (answer.status === 200) {
          this.position = answer.body;
          if (answer.body.pass) {
            this.pass = answer.body.pass;
            this.passExpiresAt = Date.parse(answer.body.passExpiresAt);
          }
          this.render();
          this.page.changed();
          if (answer.body.state !== "waiting") {
            if (answer.body.state === "admitted") this.page.say("You're in: buy now, before your pass runs out.", "good");
            else this.page.say(STATES[answer.body.state] ?? "", "bad");
            return;
          }
          await sleep(answer.body.retryAfterSec * 1000 + jitterMs());
        } else if (answer.status === 403 || answer.status === 401) {
          // Not this buyer's ticket (another sign-in): join again.
          sessionStorage.removeItem(this.storageKey());
          this.ticket = undefined;
          this.render();
          return;
        } else {
          await sleep((answer.retryAfterMs || 2000) + jitterMs());
        }
      }
    } finally {
      this.polling = false;
    }
  }

  /** The line as the page shows it; `remaining` is the sale's units left. @param {number} [remaining] */
  render(remaining) {
    const p = this.position;
    $("queue-join").hidden = this.ticket !== undefined;
    // A drawn buyer far from the front is told an estimate until the line nears them.
    const estimate = p && p.place == null && p.aheadOfYou > 0 ? `about ${p.admittedThrough + p.aheadOfYou + 1}` : undefined;
    $("queue-place").textContent = p?.place == null ? (estimate ?? (this.ticket ? "drawn at the start" : "–")) : String(p.place);
    $("queue-progress").textContent = p ? `places 1–${p.admittedThrough}` : "–";
    $("queue-wait").textContent = p && p.state === "waiting" ? formatDuration(p.estimatedWaitSec * 1000) : "–";
    const likelySoldOut = p?.state === "waiting" && remaining !== undefined && p.aheadOfYou > remaining;
    $("queue-note").textContent = likelySoldOut
      ? `Likely sold out before your turn: ${p.aheadOfYou} buyers are ahead of you for ${remaining} ${remaining === 1 ? "unit" : "units"} left.`
      : p
        ? (STATES[p.state] ?? "")
        : "Join the line to buy: buyers are let in a few at a time.";
  }

  /** Once every 250 ms: the countdown to the line opening, and the pass's. @param {any} sale */
  tick(sale) {
    const opensAt = Date.parse(sale.startsAt) - sale.queue.prequeueSec * 1000;
    if (this.ticket === undefined && serverNow() < opensAt) {
      $("queue-note").textContent = `The line opens in ${formatDuration(opensAt - serverNow())}.`;
    }
    const turn = $("queue-turn");
    if (this.pass === undefined) {
      turn.hidden = true;
      return;
    }
    const left = this.passExpiresAt - serverNow();
    turn.hidden = false;
    turn.textContent =
      left > 0 ? `You're in: buy within ${formatDuration(left)}.` : "Your turn has passed: the next place was let in.";
    if (left <= 0 && this.pass !== undefined) {
      this.pass = undefined;
      this.page.changed();
    }
  }

  /** The pass bought: it is spent. */
  used() {
    this.pass = undefined;
    $("queue-turn").hidden = true;
  }
}
