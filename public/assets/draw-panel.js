// @ts-check
// A sale sold by draw on its page (docs/draws.md), in place of Buy: the entries' window in
// words, the page's size picker and quantity (moved from Buy's form into the panel's while it
// shows), Enter (Change entry once entered) and Withdraw while
// entries are open, and the buyer's entry in one status line (#draw-line), true of where it
// stands: entered, withdrawn, selected, waitlisted, not selected. A winner's order is an
// ordinary order awaiting payment: the page's order panel shows it, with Pay and its
// countdown. Below, the receipt only the entrant gets, and what it proves.
//
// A sale with presale lanes has a draw per lane (docs/lanes.md): while a first entry may be
// made, the lanes' code field (lanes.js, moved here with the picker) takes an optional code,
// sent as Access-Code, whose lane's draw the entry is in; without one it is in the public
// draw. The status line names the entry's draw and when its winners get their orders.
//
// The entry is the server's (GET /api/sales/:id/entries/mine): read on load, after each change
// and whenever the draw moves on, so a reload shows it again as a held order is found again.
// The draw's public view (GET /api/sales/:id/draw, cached a second) is read every 2 s while
// the draw runs, every 10 s otherwise, and no more once the buyer's result is final; a
// Retry-After is waited out.

import { drawName } from "./lanes.js";
import { call, jitterMs, serverNow, sleep } from "./lib/api.js";
import { formatTime, formatWait } from "./lib/format.js";
import { hasVariants } from "./lib/variants.js";

/** While the draw runs its result comes within seconds; otherwise little changes. */
const RUNNING_POLL_MS = 2000;
const QUIET_POLL_MS = 10_000;
/** A winner waits for the order the draw offers once the sale starts. */
const OFFER_POLL_MS = 3000;

/** What a refused entry or withdrawal means to the buyer; other codes show the server's own message. */
const REFUSALS = /** @type {Record<string, string>} */ ({
  DRAW_CLOSED: "Entries are closed: the draw is running.",
  DRAW_NOT_OPEN: "Entries are not open yet.",
  HUMAN_CHECK_REQUIRED: "Complete the check, then enter again.",
  HUMAN_CHECK_FAILED: "The check did not go through: complete it again, then enter.",
  SALE_CANCELLED: "This sale was cancelled.",
  VARIANT_NOT_FOUND: "That size is not in this draw: choose another.",
  NOT_ENTERED: "You have no entry to withdraw.",
});

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** Writes text only when it changed: a status line is announced on every write. */
function setText(/** @type {string} */ id, /** @type {string} */ text) {
  const node = $(id);
  if (node.textContent !== text) node.textContent = text;
}

/** @typedef {"upcoming" | "open" | "running" | "drawn" | "cancelled"} Phase */

/**
 * The catalog's line for a sale sold by draw, or undefined for any other sale.
 * @param {any} sale
 */
export function drawCardLine(sale) {
  if (!sale.draw) return undefined;
  const now = serverNow();
  if (now < Date.parse(sale.draw.opensAt)) return `sold by draw, entries open ${formatTime(sale.draw.opensAt)}`;
  if (now < Date.parse(sale.draw.closesAt)) return `sold by draw: enter before ${formatTime(sale.draw.closesAt)}`;
  return "sold by draw, entries closed";
}

/**
 * @typedef {object} DrawPage what the sale's page lends the panel
 * @property {() => string} token the buyer's token, "" when signed out
 * @property {() => string} signInNote what to do to enter while signed out
 * @property {(text: string, tone?: "good" | "bad" | "wait" | "") => void} say the page's status line (outcomes of a press)
 * @property {(then: string) => Promise<void>} tokenRefused the API refused the token
 * @property {() => string | undefined} orderId the order the page follows
 * @property {(orderId: string) => void} follow shows and follows an order on the page
 * @property {() => { token: string | undefined, reset: () => void, trouble: string }} humanCheck the widget beside Enter, where the sale asks
 * @property {() => string | undefined} accessCode the presale code typed, while the field shows
 * @property {(answer: import("./lib/api.js").Answer) => string | undefined} codeRefusal a refused code in words
 */

export class DrawPanel {
  stopped = false;
  polling = false;
  working = false;
  /** @type {any} the sale as last read */
  sale;
  /** @type {any} the draw's public view as last read */
  view;
  /** @type {any} the buyer's entry: undefined until read, null when there is none */
  entry;

  /** @param {string} api the API's origin @param {string} saleId @param {DrawPage} page */
  constructor(api, saleId, page) {
    this.api = api;
    this.saleId = saleId;
    this.page = page;
    $("draw").hidden = false;
    $("buy").hidden = true;
    $("draw-entry").prepend($("variant-field"), $("quantity-field"), $("access-code-field"));
    $("draw-entry").onsubmit = (event) => {
      event.preventDefault();
      void this.enter();
    };
    $("draw-withdraw").onclick = () => void this.withdraw();
    /** @type {HTMLAnchorElement} */ ($("draw-record")).href = `${api}/api/sales/${saleId}/draw`;
  }

  stop() {
    this.stopped = true;
    $("draw").hidden = true;
    $("buy").hidden = false;
    $("buy").prepend($("variant-field"), $("quantity-field"), $("access-code-field"));
  }

  /** The sale as the page last read it (its first read starts following the draw). @param {any} sale */
  show(sale) {
    const first = !this.sale;
    this.sale = sale;
    if (first) void this.follow();
    this.paint();
  }

  /** Someone else (or nobody) signed in: their entry, read afresh. */
  identityChanged() {
    this.entry = undefined;
    this.paint();
    void this.readEntry().then(() => this.follow());
  }

  /** Where the draw stands: the server's clock for the window, the draw's view for its result. @returns {Phase} */
  phase() {
    if (this.sale.status === "cancelled") return "cancelled";
    if (this.view?.state === "drawn") return "drawn";
    const now = serverNow();
    if (now < Date.parse(this.sale.draw.opensAt)) return "upcoming";
    return now < Date.parse(this.sale.draw.closesAt) ? "open" : "running";
  }

  /** The page's countdown while entries open or are open; undefined after the close. */
  clock() {
    const phase = this.sale ? this.phase() : "running";
    if (phase === "upcoming") return { label: "Entries open in", ms: Date.parse(this.sale.draw.opensAt) - serverNow() };
    if (phase === "open") return { label: "Entries close in", ms: Date.parse(this.sale.draw.closesAt) - serverNow() };
    return undefined;
  }

  /** The window in words. @param {Phase} phase */
  windowLine(phase) {
    const { opensAt, closesAt } = this.sale.draw;
    const now = serverNow();
    switch (phase) {
      case "upcoming":
        return `Entries open ${formatWait(Date.parse(opensAt) - now)}, at ${formatTime(opensAt)}.`;
      case "open":
        return `Entries open until ${formatTime(closesAt)}: they close ${formatWait(Date.parse(closesAt) - now)}.`;
      case "running":
        return "Entries closed; the draw is running.";
      case "drawn":
        return this.view.drawnAt ? `Drawn at ${formatTime(this.view.drawnAt)}.` : "Drawn.";
      case "cancelled":
        return "This sale was cancelled: the draw will not go on.";
    }
  }

  /** Whether the buyer's next entry may name a presale code: a first one (or after a withdrawal), in a sale with lanes. */
  takesCode() {
    if (!this.sale?.lanes?.length || !this.page.token() || this.phase() !== "open") return false;
    return this.entry === null || this.entry?.status === "withdrawn";
  }

  /** In a sale with lanes, the entry's draw ("members' draw", "public draw"); undefined without lanes. @param {any} entry */
  drawOf(entry) {
    return this.sale.lanes?.length ? drawName(entry.lane) : undefined;
  }

  /** When the winners of the entry's draw get their orders: its lane's start, else the sale's. @param {any} entry */
  offeredAt(entry) {
    return this.sale.lanes?.find((/** @type {any} */ lane) => lane.name === entry.lane)?.startsAt ?? this.sale.startsAt;
  }

  /** The buyer's entry in one line, true of where it stands. @param {Phase} phase */
  entryLine(phase) {
    const entry = this.entry;
    const before = phase === "upcoming" || phase === "open";
    if (!this.page.token()) return before ? "" : "Sign in to see your entry.";
    if (entry === undefined) return "";
    if (entry === null) return before ? "You have not entered yet." : "You did not enter this draw.";
    const draw = this.drawOf(entry);
    const what = draw ? ` in the ${draw}: ${this.described(entry)}` : `: ${this.described(entry)}`;
    const offered = formatTime(this.offeredAt(entry));
    const closes = formatTime(this.sale.draw.closesAt);
    switch (entry.status) {
      case "entered":
        if (phase !== "open") return `You are entered${what}. The draw is running: your result shows here.`;
        return draw
          ? `You are entered${what}. Its winners get their orders from ${offered}. You can change or withdraw your entry until ${closes}.`
          : `You are entered${what}. You can change or withdraw your entry until ${closes}.`;
      case "withdrawn":
        return phase === "open"
          ? `You withdrew your entry: it is not in the draw. You can enter again until ${closes}.`
          : "You withdrew your entry: it is not in the draw.";
      case "selected":
        if (entry.orderId) return `You were selected${what}. Your order is below.`;
        return serverNow() < Date.parse(this.offeredAt(entry))
          ? `You were selected${what}. Your order to pay comes ${entry.lane ? "when your lane opens" : "when the sale starts"}, ${offered}.`
          : `You were selected${what}. Your order to pay is on its way: it shows here in a few seconds.`;
      case "waitlisted":
        return "You are on the waitlist: if a unit comes back it is offered to you.";
      case "not_selected":
        return "You were not selected in this draw.";
      default:
        return `Your entry is ${entry.status}.`;
    }
  }

  /** "EU 42 × 1", or "1 unit" in a sale without sizes. @param {any} entry */
  described(entry) {
    if (!hasVariants(this.sale)) return `${entry.quantity} ${entry.quantity === 1 ? "unit" : "units"}`;
    const label = this.sale.variants.find((/** @type {any} */ v) => v.id === entry.variant)?.label ?? entry.variant;
    return `${label} × ${entry.quantity}`;
  }

  /** Why Enter cannot be pressed now, or "" when it can. */
  blocker() {
    if (!this.page.token()) return this.page.signInNote();
    if (this.working) return "Working on it…";
    if (this.entry === undefined) return "Reading your entry…";
    const check = this.page.humanCheck();
    if (this.sale.humanCheck && !check.token)
      return check.trouble || `Complete the check beside ${enterLabel(this.entry)} first.`;
    if (hasVariants(this.sale) && !chosenSize()) return "Choose a size first.";
    return "";
  }

  /** The panel as things stand: called on every read and every tick of the page. */
  paint() {
    if (!this.sale || this.stopped) return;
    const phase = this.phase();
    setText("draw-window", this.windowLine(phase));
    setText("draw-line", this.entryLine(phase));
    const entered = this.entry?.status === "entered";
    $("draw-entry").hidden = phase !== "open";
    setText("draw-enter", enterLabel(this.entry));
    $("draw-withdraw").hidden = !entered;
    const why = this.blocker();
    // aria-disabled rather than disabled: the button keeps focus, and says why beside it.
    $("draw-enter").setAttribute("aria-disabled", String(why !== ""));
    $("draw-withdraw").setAttribute("aria-disabled", String(this.working));
    setText("draw-note", why);
    this.paintReceipt();
  }

  /** The receipt, and what it proves once the entries are committed. */
  paintReceipt() {
    const entry = this.entry;
    $("draw-receipt").hidden = !entry?.receipt;
    if (!entry?.receipt) return;
    setText("draw-receipt-value", entry.receipt);
    const proof = entry.proof;
    const root = this.view?.entriesRoot;
    for (const [id, value] of [
      ["draw-leaf", proof?.leafHash],
      ["draw-root", proof && root],
    ]) {
      $(`${id}-label`).hidden = !value;
      $(id).hidden = !value;
      setText(id, value ?? "");
    }
    setText("draw-proves", this.proves(entry, Boolean(root)));
  }

  /** What the receipt proves, in words. @param {any} entry @param {boolean} committed */
  proves(entry, committed) {
    if (entry.proof) {
      const drawn = this.view?.state === "drawn" ? "were drawn" : "are drawn";
      return (
        `Your entry is number ${entry.proof.leafIndex + 1} of the ${entry.proof.treeSize} in the list published at the close. ` +
        "Its proof, from your receipt, leads to the list's fingerprint below: your entry cannot have been left out or changed. " +
        `The winners ${drawn} from this list with a random number nobody knew before the close, and anyone can draw them again from the public record.`
      );
    }
    if (entry.status === "withdrawn") return "Your entry was withdrawn, so it is not in the draw's list.";
    if (committed) return "Your entry is not in the list published at the close.";
    return (
      "Only you get this receipt. With your account it makes your entry's line in the list of entries published at the close, " +
      "which names nobody. Once it is published, the proof that your entry is in it shows here."
    );
  }

  /** The entry as read or answered; the picker shows a first-read entry, and a winner's order is followed. @param {any} entry */
  setEntry(entry) {
    const firstRead = this.entry === undefined;
    this.entry = entry;
    if (entry && firstRead) pick(entry);
    if (entry?.orderId && this.page.orderId() !== entry.orderId) this.page.follow(entry.orderId);
    this.paint();
  }

  async readEntry() {
    const token = this.page.token();
    if (!token) return;
    const answer = await call(this.api, `/api/sales/${this.saleId}/entries/mine`, { token });
    if (this.stopped || token !== this.page.token()) return;
    if (answer.status === 200) this.setEntry(answer.body);
    else if (answer.code === "NOT_ENTERED") this.setEntry(null);
    else if (answer.status === 401) await this.page.tokenRefused("see your entry");
    // Anything else (a busy moment): what is shown stays, and the next read asks again.
  }

  /** Whether the buyer's result may still change: the draw not drawn, or an offer to come. */
  waiting() {
    if (this.view?.state !== "drawn") return true;
    return (this.entry?.status === "selected" && !this.entry.orderId) || this.entry?.status === "waitlisted";
  }

  /** How long until the next read. */
  pause() {
    if (this.view?.state === "drawn") return this.entry?.status === "selected" ? OFFER_POLL_MS : QUIET_POLL_MS;
    return this.phase() === "running" ? RUNNING_POLL_MS : QUIET_POLL_MS;
  }

  /** Reads the draw, and the entry whenever the draw moved on or an offer may have come, until the result is final. */
  async follow() {
    if (this.polling) return;
    this.polling = true;
    let seen = "";
    try {
      while (!this.stopped && this.waiting()) {
        let wait = this.pause();
        if (document.visibilityState === "visible" || !this.view) {
          const answer = await call(this.api, `/api/sales/${this.saleId}/draw`);
          if (this.stopped) return;
          if (answer.status === 200) {
            this.view = answer.body;
            const moved = `${answer.body.state} ${answer.body.entriesRoot}`;
            if (moved !== seen || this.view.state === "drawn" || this.entry === undefined) await this.readEntry();
            seen = moved;
            this.paint();
            wait = this.pause();
          } else if (answer.retryAfterMs) {
            wait = answer.retryAfterMs + jitterMs();
          }
        }
        await sleep(wait);
      }
    } finally {
      this.polling = false;
    }
  }

  async enter() {
    if (this.blocker() !== "") return;
    const token = this.page.token();
    const variant = hasVariants(this.sale) ? chosenSize() : undefined;
    const quantity = Number(/** @type {HTMLSelectElement} */ ($("quantity")).value) || 1;
    // Only a first entry names a code: a change keeps the entry's draw.
    const accessCode = this.takesCode() ? this.page.accessCode() : undefined;
    // A token passes once: this entry's retries send it again (a refusal asks for a fresh check).
    const check = this.page.humanCheck();
    const was = this.entry;
    this.working = true;
    this.paint();
    let troubles = 0;
    try {
      while (!this.stopped) {
        const answer = await call(this.api, `/api/sales/${this.saleId}/entries`, {
          method: "POST",
          token,
          body: { quantity, ...(variant && { variant }) },
          headers: { ...(check.token && { "Human-Check": check.token }), ...(accessCode && { "Access-Code": accessCode }) },
        });
        if (answer.status === 200 || answer.status === 201) {
          const { entry, receipt } = answer.body;
          const same = was?.status === "entered" && was.variant === entry.variant && was.quantity === entry.quantity;
          this.setEntry({ status: "entered", variant: entry.variant, quantity: entry.quantity, lane: entry.lane, receipt });
          this.page.say(same ? "Your entry stays as it was." : "", same ? "good" : "");
          return;
        }
        // A refused code (too many refused ones included) ends the entry: trying again would not help.
        const codeRefusal = accessCode && this.page.codeRefusal(answer);
        if (codeRefusal) return this.page.say(`Not entered. ${codeRefusal}`, "bad");
        if (answer.status === 429 || answer.status === 0 || answer.status === 503) {
          // Entering again is safe: a buyer holds one entry, and a repeat changes nothing.
          troubles += 1;
          if (troubles > 6) return this.page.say("The draw cannot be reached right now. Please try again in a minute.", "bad");
          const wait = (answer.retryAfterMs || Math.min(8000, 500 * 2 ** troubles)) + jitterMs();
          const seconds = Math.ceil(wait / 1000);
          this.page.say(
            answer.status === 429
              ? `Many people are entering: trying again in ${seconds} s. Keep this page open.`
              : `Connection trouble: trying again in ${seconds} s (you never hold two entries).`,
            "wait",
          );
          await sleep(wait);
          continue;
        }
        if (answer.status === 401) return await this.page.tokenRefused("enter");
        return this.page.say(REFUSALS[answer.code] ?? `Not entered: ${answer.message}`, "bad");
      }
    } finally {
      this.working = false;
      check.reset();
      this.paint();
    }
  }

  async withdraw() {
    const token = this.page.token();
    if (this.working || !token || this.entry?.status !== "entered") return;
    this.working = true;
    this.paint();
    try {
      const answer = await call(this.api, `/api/sales/${this.saleId}/entries/mine`, { method: "DELETE", token });
      if (answer.status === 204) {
        this.setEntry({ ...this.entry, status: "withdrawn" });
        this.page.say("");
        // The button is gone: the keyboard goes to the one that enters again.
        $("draw-enter").focus();
      } else if (answer.status === 401) {
        await this.page.tokenRefused("withdraw");
      } else {
        this.page.say(REFUSALS[answer.code] ?? `Not withdrawn: ${answer.message}`, "bad");
      }
    } finally {
      this.working = false;
      this.paint();
    }
  }
}

/** What the button that enters says: entering, or changing the entry held. @param {any} entry */
const enterLabel = (entry) => (entry?.status === "entered" ? "Change entry" : "Enter the draw");

/** The size picked for the entry, if any. */
function chosenSize() {
  const chosen = /** @type {HTMLInputElement | null} */ (document.querySelector('input[name="variant"]:checked'));
  return chosen?.value || undefined;
}

/** The picker set to an entry's size and quantity. @param {{ variant: string, quantity: number }} entry */
function pick(entry) {
  const size = /** @type {HTMLInputElement | null} */ (
    document.querySelector(`input[name="variant"][value="${CSS.escape(entry.variant)}"]`)
  );
  if (size) size.checked = true;
  const quantity = /** @type {HTMLSelectElement} */ ($("quantity"));
  if ([...quantity.options].some((o) => o.value === String(entry.quantity))) quantity.value = String(entry.quantity);
}
