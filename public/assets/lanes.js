// @ts-check
// A sale's presale lanes on its page (docs/lanes.md): who may buy when, in words ("Members
// from 10:00 AM · 3 left · open now", "Fans from 10:30 AM", "Everyone from 11:00 AM"), and,
// while a lane is open and the public start has not come, the code field beside Buy, labelled
// for the open lane ("Members: enter your code") and sent as the Access-Code header. What the
// buyer types is kept in this module's memory for the page's life, never in storage (a code
// buys like a card). From the public start the field goes: codes are no longer asked for.
// Which lane is open is the server's clock against the lanes' starts, so the field comes and
// goes on time between two reads of the sale.
// A sale sold by draw with lanes: each lane has its own draw, offered from the lane's start. The
// list says when each draw's winners get their orders, and the same field, moved into the draw's
// panel (draw-panel.js), takes an optional code while a first entry may name one: the code's
// lane's draw, or none for the public draw.
import { serverNow } from "./lib/api.js";
import { formatClock } from "./lib/format.js";

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** Writes text only when it changed: a label or note is announced on every write. */
function setText(/** @type {string} */ id, /** @type {string} */ text) {
  const node = $(id);
  if (node.textContent !== text) node.textContent = text;
}

/** The codes typed on this page, by sale: a buyer who looks at another sale and comes back finds theirs. */
const typed = new Map();

/** @param {string} text */
const capitalized = (text) => text.charAt(0).toUpperCase() + text.slice(1);

/** A lane's name as a buyer reads it: "members" reads "Members", "early-birds" "Early birds". @param {string} name */
const laneLabel = (name) => capitalized(name.replaceAll("-", " "));

/**
 * The draw an entry is in, as a buyer reads it: "members' draw", "vip's draw", "public draw"
 * for none (a sale sold by draw with lanes).
 * @param {string | undefined} lane
 */
export function drawName(lane) {
  if (!lane) return "public draw";
  const spaced = lane.replaceAll("-", " ");
  return `${spaced}${spaced.endsWith("s") ? "'" : "'s"} draw`;
}

/** What the field says it is for, beside a lane's Buy, and beside Enter in a draw. */
const CODE_HINT = "As the shop sent it, such as 7KQ2-M9XD-4TRA.";
const DRAW_CODE_HINT = "Optional: as the shop sent it, such as 7KQ2-M9XD-4TRA. Without one you enter the public draw.";

/**
 * The lane open at `now`: the last one started, while the public start has not come.
 * @param {any} sale @param {number} now @returns {any}
 */
function laneOpenAt(sale, now) {
  if (now >= Date.parse(sale.startsAt)) return undefined;
  return (sale.lanes ?? []).filter((/** @type {any} */ lane) => Date.parse(lane.startsAt) <= now).at(-1);
}

/**
 * For a sale with a waiting room, the lane whose own line takes joiners at `now` (from its
 * start less the pre-queue's length until the next lane's start, or the public start): the
 * code is sent with the join there, before the lane itself opens.
 * @param {any} sale @param {number} now @returns {any}
 */
function laneJoinableAt(sale, now) {
  if (!sale.queue || sale.queue.mode === "off" || now >= Date.parse(sale.startsAt)) return undefined;
  const early = sale.queue.prequeueSec * 1000;
  const lanes = sale.lanes ?? [];
  return lanes.find((/** @type {any} */ lane, /** @type {number} */ i) => {
    const closes = Date.parse(lanes[i + 1]?.startsAt ?? sale.startsAt);
    return Date.parse(lane.startsAt) - early <= now && now < closes;
  });
}

/** The lane that opens after `now`, if one is still to come. @param {any} sale @param {number} now @returns {any} */
const laneAfter = (sale, now) => (sale.lanes ?? []).find((/** @type {any} */ lane) => Date.parse(lane.startsAt) > now);

/** What a lane still holds, in words. @param {number} remaining */
const unitsLeft = (remaining) => (remaining > 0 ? `${remaining} left` : "none left in this lane");

/**
 * The catalog's line for a sale whose lanes come before its public start ("Members now,
 * everyone from 11:00 AM"); undefined for any other sale, or once everyone can buy.
 * @param {any} sale
 */
export function laneCardLine(sale) {
  const now = serverNow();
  if (!sale.lanes?.length || now >= Date.parse(sale.startsAt)) return undefined;
  const open = laneOpenAt(sale, now);
  const first = open ?? sale.lanes[0];
  return `${laneLabel(first.name)} ${open ? "now" : `from ${formatClock(first.startsAt)}`}, everyone from ${formatClock(sale.startsAt)}`;
}

/**
 * @typedef {object} LanePage what the sale's page lends the panel
 * @property {() => void} changed the open lane or the code changed: Buy's note is drawn again
 * @property {(text: string) => void} news a lane just opened: said unless the buyer is busy buying
 * @property {() => boolean} entryTakesCode in a sale sold by draw, whether the buyer's next entry may name a code
 */

export class LanePanel {
  /** @type {any} the sale as last read */
  sale;
  /** @type {string | undefined} the lane open when last painted ("" for none; undefined before the first paint) */
  shownLane;

  /** @param {string} saleId @param {LanePage} page */
  constructor(saleId, page) {
    this.saleId = saleId;
    this.page = page;
    const input = this.input();
    input.value = typed.get(saleId) ?? "";
    input.removeAttribute("aria-invalid");
    input.oninput = () => {
      typed.set(saleId, input.value);
      input.removeAttribute("aria-invalid");
      page.changed();
    };
    $("lanes").hidden = false;
  }

  input() {
    return /** @type {HTMLInputElement} */ ($("access-code"));
  }

  stop() {
    $("lanes").hidden = true;
    $("access-code-field").hidden = true;
    $("lane-list").replaceChildren();
    delete $("lane-list").dataset.key;
    this.input().oninput = null;
    this.input().value = "";
  }

  /** The sale as the page last read it. @param {any} sale */
  show(sale) {
    this.sale = sale;
    this.paint();
  }

  /** The lane open now, by the server's clock. @returns {any} */
  open() {
    return this.sale && laneOpenAt(this.sale, serverNow());
  }

  /** The lane a code is asked for now: the open one, or one whose own line takes joiners already. @returns {any} */
  asking() {
    return this.sale && (laneOpenAt(this.sale, serverNow()) ?? laneJoinableAt(this.sale, serverNow()));
  }

  /** Whether the field shows now: in a draw while an entry may name a code, else while a code is asked for. */
  asks() {
    if (!this.sale) return false;
    return this.sale.draw ? this.page.entryTakesCode() : Boolean(this.asking());
  }

  /** The lanes and the code field as things stand: on every read and every tick of the page. */
  paint() {
    if (!this.sale) return;
    const now = serverNow();
    const open = laneOpenAt(this.sale, now);
    this.paintList(open);
    if (this.sale.draw) {
      $("access-code-field").hidden = !this.page.entryTakesCode();
      setText("access-code-label", "Have a presale code? Enter it to enter your lane's draw");
      setText("access-code-hint", DRAW_CODE_HINT);
    } else {
      const asking = open ?? laneJoinableAt(this.sale, now);
      $("access-code-field").hidden = !asking;
      if (asking) setText("access-code-label", `${laneLabel(asking.name)}: enter your code`);
      setText("access-code-hint", CODE_HINT);
    }
    const name = open?.name ?? "";
    if (this.shownLane === name) return;
    // A lane opening while the buyer watches is news; the public start the page says itself. In
    // a draw the panel's line tells a lane's winners of their order.
    if (this.shownLane !== undefined && open && !this.sale.draw)
      this.page.news(`${laneLabel(open.name)} can buy now: enter your code beside Buy.`);
    this.shownLane = name;
    this.page.changed();
  }

  /**
   * One line per lane and one for everyone, the open lane marked; built again only when a line
   * changes. In a draw, when each lane's draw and the public one offer their winners' orders.
   * @param {any} open
   */
  paintList(open) {
    const draw = Boolean(this.sale.draw);
    const lines = [
      ...this.sale.lanes.map((/** @type {any} */ lane) => ({
        text: draw
          ? `${capitalized(drawName(lane.name))}: winners buy from ${formatClock(lane.startsAt)}`
          : `${laneLabel(lane.name)} from ${formatClock(lane.startsAt)}${lane === open ? ` · ${unitsLeft(lane.remaining)}` : ""}`,
        open: lane === open,
      })),
      {
        text: draw
          ? `Public draw: winners buy from ${formatClock(this.sale.startsAt)}`
          : `Everyone from ${formatClock(this.sale.startsAt)}`,
        open: false,
      },
    ];
    const list = $("lane-list");
    const key = JSON.stringify(lines);
    if (list.dataset.key === key) return;
    list.dataset.key = key;
    list.replaceChildren(
      ...lines.map((line) => {
        const item = document.createElement("li");
        item.textContent = line.text;
        if (line.open) {
          item.setAttribute("aria-current", "true");
          const mark = document.createElement("strong");
          mark.textContent = " · open now";
          item.append(mark);
        }
        return item;
      }),
    );
  }

  /** The page's countdown before the public start: to the next lane, then to everyone. */
  clock() {
    if (!this.sale) return undefined;
    const now = serverNow();
    const next = laneAfter(this.sale, now);
    const draw = Boolean(this.sale.draw);
    if (next)
      return {
        label: draw ? `${capitalized(drawName(next.name))}: winners buy in` : `${laneLabel(next.name)} can buy in`,
        ms: Date.parse(next.startsAt) - now,
      };
    const starts = Date.parse(this.sale.startsAt);
    if (now >= starts) return undefined;
    return { label: draw ? "Public draw: winners buy in" : "Everyone can buy in", ms: starts - now };
  }

  /** The code to send as Access-Code: the one typed, while the field shows. */
  code() {
    return this.asks() ? this.input().value.trim() || undefined : undefined;
  }

  /** Why Buy cannot be pressed in a lane's window, or "" when it can; undefined when no lane is open. */
  blocker() {
    const open = this.open();
    if (!open) return undefined;
    if (open.remaining === 0) return this.soldInLane(open, undefined);
    if (this.input().value.trim() === "")
      return `Enter your code to buy now, or come back at ${formatClock(this.sale.startsAt)} when everyone can.`;
    return "";
  }

  /** What a lane sold out means, and where more may come from. @param {any} lane @param {string | undefined} size */
  soldInLane(lane, size) {
    const next = laneAfter(this.sale, serverNow());
    const later = next
      ? `${laneLabel(next.name)} from ${formatClock(next.startsAt)}`
      : `everyone can buy from ${formatClock(this.sale.startsAt)}, if any are left`;
    return `${laneLabel(lane.name)}: this lane's units${size ? ` of ${size}` : ""} are sold. A later lane may have more: ${later}.`;
  }

  /**
   * A refused checkout in words, where the refusal is about the lanes; undefined otherwise.
   * @param {import("./lib/api.js").Answer} answer @param {string | undefined} size the size bought, as the buyer reads it
   */
  refusal(answer, size) {
    switch (answer.code) {
      case "ACCESS_CODE_REQUIRED":
        return `Until ${formatClock(this.sale.startsAt)} only code holders can buy or join the line: enter your code in the field for it.`;
      case "ACCESS_CODE_INVALID":
        this.input().setAttribute("aria-invalid", "true");
        return this.sale.draw
          ? "That code is not valid for you: check it as written, or empty the field to enter the public draw. A code is for one account only."
          : "That code is not valid for you: check it as written. A code buys for one account only, and only from its lane's start.";
      case "ACCESS_CODE_USED":
        this.input().setAttribute("aria-invalid", "true");
        return `That code is used up: it has bought all it may.${this.sale.draw ? " Empty the field to enter the public draw." : ""}`;
      case "SOLD_OUT": {
        const open = this.open();
        return open && answer.message.includes("lane") ? this.soldInLane(open, size) : undefined;
      }
      case "RATE_LIMITED":
        if (!answer.message.includes("access code")) return undefined;
        return `Too many codes were refused: wait ${Math.ceil(answer.retryAfterMs / 1000) || 60} s, check your code, then try again.`;
      default:
        return undefined;
    }
  }
}
