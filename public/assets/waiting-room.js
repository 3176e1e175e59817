// @ts-check
// A queued sale's waiting room on the sale page: join the line, follow the place as the line
// moves (polling when the server says to), and hold the pass once admitted. The pass goes with
// the checkout as Queue-Pass; Buy stays closed until then. A sale with the human check asks
// for it at the join (Human-Check), and the pass carries it to checkout.
//
// The room says one thing at a time, in one status line (#queue-note) drawn from where the
// buyer stands (roomLine): before the line opens, waiting (with the wait in words, and whether
// the units will likely be gone first: both the server's estimates, so every page says the
// same), held by the shop, their turn, their turn passed, sold out, over. Its words change
// rarely, so a screen reader hears each change; the one ticking figure, the time left to buy,
// sits beside it, not in it.
import { call, jitterMs, serverNow, sleep } from "./lib/api.js";
import { formatDuration, formatTime, formatWait } from "./lib/format.js";
import { tabStorage } from "./lib/tab-storage.js";

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** Writes text only when it changed: a status line is announced on every write. */
function setText(/** @type {string} */ id, /** @type {string} */ text) {
  const node = $(id);
  if (node.textContent !== text) node.textContent = text;
}

/**
 * When the ticket's line lets people in from: a presale lane's own line (the ticket's `l`
 * claim, readable by anyone: only its mac is secret) from its lane's start, the public line from
 * the sale's.
 * @param {any} sale
 * @param {string | undefined} ticket
 */
function lineStartsAt(sale, ticket) {
  let lane;
  try {
    lane = JSON.parse(atob((ticket ?? "").split(".")[1]?.replace(/-/g, "+").replace(/_/g, "/") ?? "")).l;
  } catch {
    lane = undefined; // no ticket yet, or not one this page can read: the public line
  }
  const own = lane === undefined ? undefined : (sale.lanes ?? []).find((/** @type {any} */ l) => l.name === lane);
  return Date.parse(own ? own.startsAt : sale.startsAt);
}

/**
 * Where the buyer stands, as the room's one status line says it.
 * @param {{ sale: any, now: number, ticket: boolean, lineStartsAt: number, position: any, waitUntil: number | undefined, passExpiresAt: number | undefined, bought: boolean, remaining: number, humanCheck: boolean }} at
 */
function roomLine(at) {
  const { sale, now, position: p } = at;
  if (at.bought) return "You bought on your turn: your order is below.";
  if (sale.status === "ended" || sale.status === "cancelled") return "The sale is over: the line is closed.";
  if (at.passExpiresAt !== undefined) {
    return at.passExpiresAt > now
      ? "Your turn: buy now. If the time to buy runs out, your place goes to the next person in line."
      : "Your turn has passed: your place went to the next person in line.";
  }
  if (sale.status === "sold_out" || p?.state === "sold_out") return "Sold out: no unit is left for a place not yet let in.";
  if (!at.ticket) return lineToJoin(at);
  if (!p) return "Finding your place in the line…";
  if (p.state === "closed") return "Your turn has passed: your place went to the next person in line.";
  const startsAt = at.lineStartsAt;
  if (p.place === null && p.aheadOfYou === 0) {
    const what = startsAt === Date.parse(sale.startsAt) ? "the sale" : "your lane";
    return `You are in the line. Places are drawn when ${what} starts, ${formatWait(startsAt - now)}. Keep this page open.`;
  }
  if (p.state === "paused")
    return "The shop is holding the line for now: nobody is let in, and your place is kept. Keep this page open.";
  const units = `${at.remaining} ${at.remaining === 1 ? "unit" : "units"}`;
  const likelyGone = p.likelySoldOutBeforeYou
    ? ` The ${units} left will most likely be gone before your turn; you keep your place in case some come back.`
    : " Keep this page open: Buy opens then.";
  // Next in line and still waiting: a place frees up when a pass before it runs out, goes unused or a unit comes back.
  if (p.aheadOfYou === 0 && sale.status === "live") {
    return p.likelySoldOutBeforeYou
      ? `You are next in line.${likelyGone}`
      : "You are next in line. Keep this page open: Buy opens on your turn.";
  }
  const ahead = `${p.aheadOfYou} ${p.aheadOfYou === 1 ? "person is" : "people are"} ahead of you`;
  if (now < startsAt)
    return `You are in line: ${ahead}. Buyers are let in from the start, ${formatWait(startsAt - now)}.${likelyGone}`;
  if (at.waitUntil === undefined) return `You are in line: ${ahead}; there is no estimate of your turn yet.${likelyGone}`;
  return `You are in line: ${ahead}. Your turn comes ${formatWait(at.waitUntil - now)}.${likelyGone}`;
}

/**
 * When the first line opens: joining is refused before then. A sale with presale lanes opens
 * each lane's own line the pre-queue's length before that lane's start (its code holders join
 * with their code), the public line as long before the sale's start.
 * @param {any} sale
 */
const opensAt = (sale) =>
  Math.min(...[sale.startsAt, ...(sale.lanes ?? []).map((/** @type {any} */ l) => l.startsAt)].map(Date.parse)) -
  sale.queue.prequeueSec * 1000;

/** What a buyer without a place is told: when the line opens, or how to join it. @param {{ sale: any, now: number, humanCheck: boolean }} at */
function lineToJoin({ sale, now, humanCheck }) {
  if (now < opensAt(sale))
    return `The line opens ${formatWait(opensAt(sale) - now)} (${formatTime(opensAt(sale))}). Come back then to join it.`;
  const first = humanCheck ? "Complete the check beside Join the line, then join" : "Join the line";
  // A presale lane's own line takes its code holders (their code in the field for it) until the public line opens.
  if ((sale.lanes ?? []).length > 0 && now < Date.parse(sale.startsAt) - sale.queue.prequeueSec * 1000) {
    return `The code holders' line is open. Enter your code, then ${first.charAt(0).toLowerCase()}${first.slice(1)}: they are let in from their lane's start.`;
  }
  if (now < Date.parse(sale.startsAt)) {
    return sale.queue.mode === "random"
      ? `The line is open. ${first}: places are drawn when the sale starts.`
      : `The line is open. ${first}: buyers are let in from the start, in the order they joined.`;
  }
  return `${first} to buy: buyers are let in a few at a time.`;
}

export class WaitingRoom {
  stopped = false;
  /** @type {string | undefined} */
  ticket;
  /** @type {any} the last standing the poll answered */
  position;
  /** @type {number | undefined} when the buyer's turn is expected, by the server's clock (the last estimate, counted down); undefined: unknown */
  waitUntil;
  /** @type {string | undefined} */
  pass;
  /** @type {number | undefined} when the pass held (or last held) runs out */
  passExpiresAt;
  bought = false;
  polling = false;

  /**
   * @param {string} api the API's origin
   * @param {string} saleId
   * @param {{ token: () => string, userId: () => string, say: (text: string, tone?: "good" | "bad" | "wait" | "") => void, changed: () => void, humanCheck: () => { needed: boolean, token: string | undefined, reset: () => void }, accessCode: () => string | undefined, codeRefusal: (answer: import("./lib/api.js").Answer) => string | undefined }} page
   */
  constructor(api, saleId, page) {
    this.api = api;
    this.saleId = saleId;
    this.page = page;
    $("queue").hidden = false;
    $("queue-join").onclick = () => void this.join();
    // A reload keeps the buyer's ticket (it is theirs: the server refuses it to anyone else).
    this.ticket = tabStorage.get(this.storageKey());
    if (this.ticket) void this.follow();
  }

  storageKey() {
    return `flash-sale:queue:${this.saleId}:${this.page.userId()}`;
  }

  stop() {
    this.stopped = true;
    $("queue").hidden = true;
  }

  /**
   * How long the sale page may wait before its next read while the buyer waits in line: the
   * line's own pace (what the server tells each poll, up to 15 s far from the front), so a
   * crowd waiting in line reads the sale no more often than it polls the line. 0 otherwise.
   */
  linePauseMs() {
    return this.ticket && this.position?.state === "waiting" ? this.position.retryAfterSec * 1000 : 0;
  }

  /** Whether Buy may be pressed: the pass is held and has time left. */
  admitted() {
    return this.pass !== undefined && (this.passExpiresAt ?? 0) > serverNow();
  }

  async join() {
    if (!this.page.token()) return this.page.say("Sign in above to join the line.", "bad");
    const check = this.page.humanCheck();
    if (check.needed && !check.token) return this.page.say("Complete the check beside Join the line first.", "bad");
    // A presale lane's line is joined with its code (bound to the buyer there; spent only at checkout).
    const code = this.page.accessCode();
    const answer = await call(this.api, `/api/sales/${this.saleId}/queue`, {
      method: "POST",
      token: this.page.token(),
      headers: { ...(check.token && { "Human-Check": check.token }), ...(code && { "Access-Code": code }) },
    });
    // A token passes once: a join that did not take it asks for a fresh check.
    if (check.token) check.reset();
    if (answer.status === 200) {
      this.ticket = answer.body.ticket;
      tabStorage.set(this.storageKey(), answer.body.ticket);
      this.page.say(""); // the room's line says where the buyer stands from here
      this.page.changed();
      void this.follow();
      return;
    }
    if (answer.code === "QUEUE_NOT_OPEN")
      return this.page.say("The line is not open yet: it opens when the countdown ends.", "wait");
    const aboutTheCode = this.page.codeRefusal(answer);
    if (aboutTheCode) return this.page.say(aboutTheCode, "bad");
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
          const wait = answer.body.estimatedWaitSec;
          this.waitUntil = wait === null ? undefined : serverNow() + wait * 1000;
          if (answer.body.pass) {
            this.pass = answer.body.pass;
            this.passExpiresAt = Date.parse(answer.body.passExpiresAt);
          }
          this.page.changed();
          if (answer.body.state !== "waiting" && answer.body.state !== "paused") return;
          await sleep(answer.body.retryAfterSec * 1000 + jitterMs());
        } else if (answer.status === 403 || answer.status === 401) {
          // Not this buyer's ticket (another sign-in): join again.
          tabStorage.remove(this.storageKey());
          this.ticket = undefined;
          this.page.changed();
          return;
        } else {
          await sleep((answer.retryAfterMs || 2000) + jitterMs());
        }
      }
    } finally {
      this.polling = false;
    }
  }

  /**
   * The room as the page shows it, by the server's clock: called on every poll and tick.
   * @param {any} sale @param {boolean} humanCheck whether the join asks for the check
   */
  render(sale, humanCheck) {
    const now = serverNow();
    if (this.pass !== undefined && (this.passExpiresAt ?? 0) <= now) {
      this.pass = undefined;
      this.page.changed();
    }
    const p = this.position;
    $("queue-join").hidden = this.ticket !== undefined || !["upcoming", "live"].includes(sale.status) || now < opensAt(sale);
    // A drawn buyer far from the front is told an estimate until the line nears them.
    const estimate = p && p.place == null && p.aheadOfYou > 0 ? `about ${p.admittedThrough + p.aheadOfYou + 1}` : undefined;
    setText("queue-place", p?.place == null ? (estimate ?? (this.ticket ? "drawn at the start" : "–")) : String(p.place));
    const letIn = !p
      ? "–"
      : p.admittedThrough === 0
        ? "nobody yet"
        : p.admittedThrough === 1
          ? "place 1"
          : `places 1–${p.admittedThrough}`;
    setText("queue-progress", letIn);
    setText("queue-time-left", this.passExpiresAt === undefined || this.bought ? "–" : formatDuration(this.passExpiresAt - now));
    setText(
      "queue-note",
      roomLine({
        sale,
        now,
        ticket: this.ticket !== undefined,
        lineStartsAt: lineStartsAt(sale, this.ticket),
        position: p,
        waitUntil: this.waitUntil,
        passExpiresAt: this.passExpiresAt,
        bought: this.bought,
        remaining: sale.remaining,
        humanCheck,
      }),
    );
  }

  /** The shop's notice as the line says it while the page follows it (null: none); undefined otherwise (the sale's says it then). */
  notice() {
    return this.polling && this.position !== undefined ? (this.position.notice ?? null) : undefined;
  }

  /** The pass bought: it is spent. */
  used() {
    this.pass = undefined;
    this.bought = true;
  }
}
