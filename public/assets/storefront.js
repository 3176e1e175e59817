// @ts-check
// The storefront: the list of sales, a sale's page with its countdown and live stock, buying
// (with a presale lane's code before the public start: lanes.js; or entering its draw:
// draw-panel.js), and the order followed to its end (paying or cancelling while it waits for
// payment).
// Plain DOM code: two views and a few forms need no framework, and the page stays a handful
// of small files with nothing to build.

import { DrawPanel, drawCardLine } from "./draw-panel.js";
import { HELD_ORDER_STATES, OPEN_ORDER_STATES, orderToShow, rememberFollowed } from "./held-order.js";
import { LanePanel, laneCardLine } from "./lanes.js";
import { call, idempotencyKey, jitterMs, serverNow, sleep } from "./lib/api.js";
import { formatDuration, formatMoney, formatTime, words } from "./lib/format.js";
import { humanCheckFor } from "./lib/human-check.js";
import { Identity } from "./lib/identity.js";
import { hasVariants } from "./lib/variants.js";
import { WaitingRoom } from "./waiting-room.js";

const API = document.querySelector('meta[name="flash-sale:api"]')?.getAttribute("content") ?? "";
const SALE_ID = /^[1-9][0-9]{0,15}$/;
const ORDER_ID = /^[1-9][0-9]{0,19}$/;
/** The sale read is cached for 500 ms on the server: polling faster would show nothing new. */
const SALE_POLL_MS = 1000;

/** What a refused checkout means to a buyer; other codes show the server's own message. */
const REFUSALS = /** @type {Record<string, string>} */ ({
  SOLD_OUT: "Sold out: every unit is taken.",
  SALE_NOT_STARTED: "Not yet: the sale has not started.",
  SALE_ENDED: "This sale has ended.",
  SALE_PAUSED: "The sale is paused. Try again when it resumes.",
  SALE_CANCELLED: "This sale was cancelled.",
  SALE_NOT_FOUND: "There is no such sale.",
  QUEUE_PASS_REQUIRED: "This sale has a waiting room: join the line, and buy on your turn.",
  QUEUE_PASS_INVALID: "Your pass is not valid for this sale: join the line again.",
  QUEUE_PASS_USED: "Your pass bought already; each pass buys once.",
  QUEUE_PASS_EXPIRED: "Your turn has passed: the next place in line was let in.",
  HUMAN_CHECK_REQUIRED: "Complete the check beside Buy first.",
  HUMAN_CHECK_FAILED: "The check did not go through: complete it again, then buy.",
});

/** What a sale's state means to a buyer waiting on its page. */
const SALE_STATES = /** @type {Record<string, string>} */ ({
  live: "The sale is open: you can buy now.",
  sold_out: "Sold out: every unit is taken.",
  ended: "This sale has ended.",
  paused: "The sale is paused for now.",
  cancelled: "This sale was cancelled.",
});

/** What the sale page says, in a box beside Buy, while the sale cannot be bought. */
const SALE_NOTICES = /** @type {Record<string, string>} */ ({
  paused: "Paused: buying is on hold until the sale resumes. Keep this page open to hear when it does.",
  cancelled: "Cancelled: this sale will not go on. Orders in it were cancelled, and paid ones will be refunded.",
  ended: "This sale has ended.",
});

/** What each order state means to its buyer. */
const ORDER_STATES = /** @type {Record<string, string>} */ ({
  pending: "Reserved for you: confirming your order…",
  awaiting_payment: "Reserved for you: pay before the time runs out.",
  confirmed: "Confirmed: it is yours.",
  paid: "Paid: it is yours.",
  expired: "The payment window closed and the unit went back on sale.",
  cancelled: "Cancelled: the unit went back on sale.",
  failed: "This order could not be completed; you were not charged and may buy again.",
});

/** @param {string} id */
const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** @type {{ devLogin: boolean, allowedOrigins: string[], turnstileSiteKey: string | null }} */
let config = { devLogin: false, allowedOrigins: [], turnstileSiteKey: null };

/** The token last drawn: an offer alone changes the account box, not the views. */
let drawnToken = /** @type {string | undefined} */ (undefined);

const identity = new Identity(() => {
  renderAccount();
  renderLinkSignIn();
  if (identity.token === drawnToken) return;
  drawnToken = identity.token;
  current?.identityChanged();
});

// ---------------------------------------------------------------------------------------
// Account

function renderAccount() {
  const signedIn = Boolean(identity.token);
  $("signed-in").hidden = !signedIn;
  $("user-name").textContent = identity.userId || "you";
  $("sign-out").hidden = !(signedIn && config.devLogin);
  $("sign-in").hidden = signedIn || !config.devLogin;
  $("signed-out").hidden = signedIn || config.devLogin;
}

/** A token from the link: whose it is, and the choice to use it or not. */
function renderLinkSignIn() {
  const offered = identity.offered;
  const box = $("link-sign-in");
  const wasShown = !box.hidden;
  box.hidden = !offered;
  if (!offered) return;
  const name = offered.userId || "an account the link does not name";
  $("link-sign-in-text").textContent = identity.token
    ? `The link you followed would sign you out of ${identity.userId || "your account"} and in as ${name}.`
    : `The link you followed signs you in as ${name}.`;
  $("link-sign-in-accept").textContent = `Continue as ${name}`;
  if (!wasShown) box.focus();
}

$("link-sign-in-accept").addEventListener("click", () => {
  identity.acceptOffer();
  $("main").focus();
});

$("link-sign-in-decline").addEventListener("click", () => {
  identity.declineOffer();
  $("main").focus();
});

$("sign-in").addEventListener("submit", async (event) => {
  event.preventDefault();
  const input = /** @type {HTMLInputElement} */ ($("sign-in-name"));
  const answer = await call(API, "/api/dev/login", { method: "POST", body: { userId: input.value.trim() } });
  if (answer.status !== 200) {
    $("account-status").textContent = `Sign-in failed: ${answer.message}`;
    input.focus();
    return;
  }
  $("account-status").textContent = "";
  identity.set(answer.body.token, { keep: true });
  // The form is gone: focus goes where the buyer is headed next (a lane's code before Buy).
  const next =
    current instanceof SalePage
      ? current.drawPanel
        ? "draw-enter"
        : current.lanes?.open()
          ? "access-code"
          : "buy-button"
      : "sign-out";
  $(next).focus();
});

$("sign-out").addEventListener("click", () => {
  identity.set(undefined);
  /** @type {HTMLInputElement} */ ($("sign-in-name")).focus();
});

// ---------------------------------------------------------------------------------------
// Views: the catalog (/) and a sale (/?sale=<id>), switched without reloading the page.

/** @typedef {{ stop(): void, identityChanged(): void }} View */
/** @type {View | undefined} */
let current;

/**
 * A sale's page stays behind "Loading…" until its first answer, then appears whole: nothing
 * on it moves when the product's details arrive.
 * @param {"catalog" | "sale" | "loading"} which
 */
function showOnly(which) {
  $("loading").hidden = which !== "loading";
  $("catalog").hidden = which !== "catalog";
  $("sale").hidden = which !== "sale";
}

function route() {
  current?.stop();
  const params = new URLSearchParams(location.search);
  const saleId = params.get("sale") ?? "";
  const orderId = params.get("order") ?? "";
  current = SALE_ID.test(saleId) ? new SalePage(saleId, ORDER_ID.test(orderId) ? orderId : undefined) : new Catalog();
}

/** @param {string} url */
function navigate(url) {
  history.pushState(null, "", url);
  route();
  // A new view: start reading from its heading, as after a page load (a sale's once it shows).
  if (current instanceof SalePage) {
    current.focusOnLoad = true;
    $("loading").focus();
  } else {
    $("catalog-title").focus();
  }
}

document.addEventListener("click", (event) => {
  const link = /** @type {HTMLElement} */ (event.target).closest?.("a");
  if (!link || !(link instanceof HTMLAnchorElement) || link.origin !== location.origin || link.pathname !== "/") return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey || event.button !== 0) return;
  event.preventDefault();
  navigate(link.href);
});
window.addEventListener("popstate", route);

// ---------------------------------------------------------------------------------------
// Catalog

class Catalog {
  stopped = false;
  /** @type {string | null} */
  cursor = null;
  loading = false;

  yourOrders = new YourOrders();

  constructor() {
    showOnly("catalog");
    document.title = "Sales · Flash sale";
    $("sale-list").replaceChildren();
    $("catalog-status").textContent = "Loading the sales…";
    $("more-sales").hidden = true;
    $("catalog-retry").hidden = true;
    $("more-sales").onclick = () => void this.load(true);
    $("catalog-retry").onclick = () => void this.load(true);
    void this.load(false);
  }

  /** One page of the catalog, after the last one shown. @param {boolean} asked the buyer pressed a button */
  async load(asked) {
    if (this.loading) return;
    this.loading = true;
    try {
      const status = $("catalog-status");
      for (;;) {
        const answer = await call(API, `/api/sales${this.cursor ? `?cursor=${encodeURIComponent(this.cursor)}` : ""}`);
        if (this.stopped) return;
        if (answer.status === 429) {
          // Many visitors at once: wait as told (plus jitter), then ask again by itself.
          const wait = (answer.retryAfterMs || 1000) + jitterMs();
          status.textContent = `Many visitors right now: trying again in ${Math.ceil(wait / 1000)} s.`;
          await sleep(wait);
          if (this.stopped) return;
          continue;
        }
        if (answer.status !== 200) {
          status.textContent = `The sales cannot be listed right now (${answer.message}).`;
          $("more-sales").hidden = true;
          $("catalog-retry").hidden = false;
          if (asked) $("catalog-retry").focus();
          return;
        }
        $("catalog-retry").hidden = true;
        const { sales, nextCursor } = answer.body;
        const cards = sales.map(saleCard);
        $("sale-list").append(...cards);
        this.cursor = nextCursor;
        $("more-sales").hidden = !nextCursor;
        const shown = $("sale-list").childElementCount;
        status.textContent =
          shown === 0 ? "No sales right now." : `${shown} ${shown === 1 ? "sale" : "sales"}${nextCursor ? ", more below" : ""}.`;
        // After "More sales", reading goes on at the first new sale (the button may be gone).
        if (asked && cards.length > 0) cards[0].querySelector("a")?.focus();
        return;
      }
    } finally {
      this.loading = false;
    }
  }

  stop() {
    this.stopped = true;
    this.yourOrders.stopped = true;
  }

  identityChanged() {
    this.yourOrders.reload();
  }
}

/**
 * The signed-in buyer's orders across sales (GET /api/orders), newest first, under the
 * catalog: each with its state, and a link to its sale while it can still be paid or cancelled.
 */
class YourOrders {
  stopped = false;
  /** @type {string | null} */
  cursor = null;

  constructor() {
    $("more-orders").onclick = () => void this.load();
    this.reload();
  }

  reload() {
    $("your-orders-list").replaceChildren();
    this.cursor = null;
    $("your-orders").hidden = !identity.token;
    if (identity.token) void this.load();
  }

  async load() {
    const status = $("your-orders-status");
    const answer = await call(API, `/api/orders${this.cursor ? `?cursor=${encodeURIComponent(this.cursor)}` : ""}`, {
      token: identity.token,
    });
    if (this.stopped) return;
    if (answer.status !== 200) {
      status.textContent = `Your orders cannot be listed right now (${answer.message}).`;
      return;
    }
    const { orders, nextCursor } = answer.body;
    $("your-orders-list").append(...orders.map(orderItem));
    this.cursor = nextCursor;
    $("more-orders").hidden = !nextCursor;
    const shown = $("your-orders-list").childElementCount;
    status.textContent =
      shown === 0 ? "No orders yet." : `${shown} ${shown === 1 ? "order" : "orders"}${nextCursor ? ", more below" : ""}.`;
  }
}

/** @param {any} order */
function orderItem(order) {
  const item = document.createElement("li");
  item.className = "order-item";
  const state = document.createElement("span");
  state.className = "badge";
  state.dataset.state = order.status;
  state.textContent = words(order.status);
  const what = document.createElement("span");
  const size = order.variantLabel ? `, ${order.variantLabel}` : "";
  what.textContent = `${order.saleName}${size}: ${order.quantity} × ${formatMoney(order.amount / order.quantity, order.currency)}`;
  const name = document.createElement("span");
  name.className = "muted num";
  name.textContent = `Order ${order.reference}`;
  name.title = `Order id ${order.orderId}`;
  item.append(what, " ", state, " ", name);
  if (order.status === "awaiting_payment") {
    const link = document.createElement("a");
    link.href = `/?sale=${encodeURIComponent(order.saleId)}&order=${encodeURIComponent(order.orderId)}`;
    link.textContent = order.expiresAt ? `Pay or cancel by ${formatTime(order.expiresAt)}` : "Pay or cancel";
    item.append(" ", link);
  }
  return item;
}

/** An https image of a sale, or undefined: the page shows no other kind. @param {any} sale */
const imageUrlOf = (sale) =>
  typeof sale.imageUrl === "string" && sale.imageUrl.startsWith("https://") ? sale.imageUrl : undefined;

/** @param {any} sale */
function saleCard(sale) {
  const item = document.createElement("li");
  item.className = "sale-card";
  const imageUrl = imageUrlOf(sale);
  if (imageUrl) {
    const image = document.createElement("img");
    image.className = "card-image";
    image.src = imageUrl;
    image.alt = sale.name;
    image.width = 400;
    image.height = 300;
    image.loading = "lazy";
    item.append(image);
  }
  const title = document.createElement("h2");
  const link = document.createElement("a");
  link.href = `/?sale=${encodeURIComponent(sale.id)}`;
  link.textContent = sale.name;
  title.append(link);
  const state = document.createElement("span");
  state.className = "badge";
  state.dataset.state = sale.status;
  state.textContent = words(sale.status);
  const stateLine = document.createElement("p");
  stateLine.append(state);
  const price = document.createElement("p");
  price.className = "card-price num";
  price.textContent = formatMoney(sale.price, sale.currency);
  const facts = document.createElement("p");
  facts.className = "num";
  const when =
    drawCardLine(sale) ??
    laneCardLine(sale) ??
    (sale.status === "upcoming" ? `Starts ${formatTime(sale.startsAt)}` : `Ends ${formatTime(sale.endsAt)}`);
  facts.textContent = `${sale.remaining} of ${sale.stock} left · ${when}`;
  item.append(title, stateLine, price, facts);
  return item;
}

// ---------------------------------------------------------------------------------------
// A sale

class SalePage {
  stopped = false;
  /** @type {any} the last SaleView read */
  sale;
  buying = false;
  paying = false;
  /** Whether focus goes to the sale's heading once it shows (after a navigation, not a page load). */
  focusOnLoad = false;
  /** Whether the status line says the sale could not be loaded yet. */
  loadTrouble = false;
  /** @type {string | undefined} the order this page follows */
  orderId;
  /** @type {any} */
  order;
  /** @type {ReturnType<typeof setInterval> | undefined} */
  ticker;
  /** @type {WaitingRoom | undefined} the sale's waiting room, when it has one */
  room;
  /** @type {DrawPanel | undefined} the sale's draw, when it is sold by draw */
  drawPanel;
  /** @type {LanePanel | undefined} the sale's presale lanes, when it has them */
  lanes;
  /** @type {import("./lib/human-check.js").HumanCheck | undefined} the widget, where the sale asks for the human check */
  humanCheck;
  /** Why the human check is not on the page, when it could not be shown. */
  humanCheckTrouble = "";

  /** @param {string} saleId @param {string} [orderId] an order of the buyer's to follow (from "Your orders"); else the one they hold, if any */
  constructor(saleId, orderId) {
    this.saleId = saleId;
    showOnly("loading");
    $("sale-name").textContent = "Loading…";
    for (const id of ["sale-description", "status", "buy-note"]) $(id).textContent = "";
    $("order").hidden = true;
    $("sale-image").hidden = true;
    $("sale-image").removeAttribute("src");
    $("sale-description").hidden = true;
    $("sale-price").hidden = true;
    $("sale-notice").hidden = true;
    $("operator-notice").hidden = true;
    $("buy").onsubmit = (event) => {
      event.preventDefault();
      void this.buy();
    };
    $("pay").onsubmit = (event) => {
      event.preventDefault();
      void this.pay(chosenPaymentToken());
    };
    $("cancel-order").onclick = () => void this.cancel();
    $("quantity").onchange = () => this.renderPrice();
    $("variants").onchange = () => {
      this.renderPrice();
      this.renderBuy();
    };
    this.ticker = setInterval(() => this.tick(), 250);
    void this.poll();
    this.buyer = identity.userId;
    if (orderId) void this.follow(orderId);
    else void this.showHeldOrder();
  }

  stop() {
    this.stopped = true;
    this.room?.stop();
    this.drawPanel?.stop();
    this.lanes?.stop();
    clearInterval(this.ticker);
    for (const id of ["human-check", "queue-human-check", "draw-human-check"]) {
      $(id).hidden = true;
      $(id).replaceChildren();
    }
  }

  identityChanged() {
    // Someone else (or nobody) now: the order shown was the last buyer's.
    if (identity.userId !== this.buyer) {
      this.buyer = identity.userId;
      this.orderId = undefined;
      this.order = undefined;
      $("order").hidden = true;
    }
    this.renderBuy();
    this.drawPanel?.identityChanged();
    if (!this.orderId) void this.showHeldOrder();
  }

  /** The buyer's order in this sale, shown and followed as if they had just bought it. */
  async showHeldOrder() {
    const token = identity.token;
    if (!token) return;
    const found = await orderToShow(API, this.saleId, { token, userId: identity.userId });
    if (this.stopped || !found || this.orderId || identity.token !== token) return;
    void this.follow(found.orderId, found.view);
  }

  /** @param {string} text @param {"good" | "bad" | "wait" | ""} [tone] */
  say(text, tone = "") {
    const status = $("status");
    status.textContent = text;
    status.dataset.tone = tone;
  }

  async poll() {
    let first = true;
    while (!this.stopped) {
      if (document.visibilityState === "visible" || first) {
        const answer = await call(API, `/api/sales/${this.saleId}`);
        if (this.stopped) return;
        if (answer.status === 200) {
          this.render(answer.body, first);
          if (first) this.shown();
          first = false;
        } else if (first && answer.status === 404) {
          $("sale-name").textContent = "No such sale";
          document.title = "No such sale · Flash sale";
          this.say(`There is no sale ${this.saleId}.`, "bad");
          this.shown();
          return;
        } else if (first) {
          // Nothing shown yet: say why, and keep asking (a later answer draws the page).
          this.say(`The sale cannot be loaded right now (${answer.message}); trying again…`, "wait");
          this.loadTrouble = true;
          this.shown();
        }
        if (answer.status === 200 && this.loadTrouble) {
          this.loadTrouble = false;
          this.say("");
        }
        // In a line, the sale is read at the line's pace, not every second.
        await sleep(
          Math.max(answer.retryAfterMs ? answer.retryAfterMs + jitterMs() : SALE_POLL_MS, this.room?.linePauseMs() ?? 0),
        );
      } else {
        await sleep(SALE_POLL_MS);
      }
    }
  }

  /** The page appears (from behind "Loading…"); after a navigation, reading starts at its heading. */
  shown() {
    showOnly("sale");
    if (this.focusOnLoad && (document.activeElement === $("loading") || document.activeElement === document.body)) {
      $("sale-name").focus();
    }
    this.focusOnLoad = false;
  }

  /** @param {any} sale @param {boolean} first */
  render(sale, first) {
    const previous = this.sale;
    this.sale = sale;
    // Name, description and image can be edited while the sale runs: drawn whenever they change.
    if (first || sale.name !== previous?.name) {
      $("sale-name").textContent = sale.name;
      document.title = `${sale.name} · Flash sale`;
    }
    setText("sale-description", sale.description ?? "");
    $("sale-description").hidden = !sale.description;
    const imageUrl = imageUrlOf(sale);
    const image = /** @type {HTMLImageElement} */ ($("sale-image"));
    if (imageUrl && image.getAttribute("src") !== imageUrl) image.src = imageUrl;
    if (image.alt !== sale.name) image.alt = sale.name;
    image.hidden = !imageUrl;
    if (first) {
      const limit = Math.max(1, Math.min(10, Number(sale.perUserLimit) || 1));
      const quantity = /** @type {HTMLSelectElement} */ ($("quantity"));
      quantity.replaceChildren(...Array.from({ length: limit }, (_, i) => new Option(String(i + 1))));
      $("quantity-field").hidden = limit === 1;
      if (sale.humanCheck) this.showHumanCheck(sale);
    }
    const notice = SALE_NOTICES[sale.status];
    $("sale-notice").hidden = !notice;
    $("sale-notice").dataset.state = sale.status;
    setText("sale-notice", notice ?? "");
    this.renderOperatorNotice();
    const state = $("sale-state");
    state.dataset.state = sale.status;
    state.textContent = words(sale.status);
    renderVariants(sale);
    $("remaining").textContent = String(sale.remaining);
    $("stock").textContent = String(sale.stock);
    $("stock-fill").style.width = `${sale.stock > 0 ? (100 * sale.remaining) / sale.stock : 0}%`;
    if (sale.queue && sale.queue.mode !== "off" && !this.room) {
      this.room = new WaitingRoom(API, this.saleId, {
        token: () => identity.token ?? "",
        userId: () => identity.userId,
        say: (text, tone) => this.say(text, tone),
        changed: () => {
          this.renderBuy();
          this.renderOperatorNotice();
        },
        humanCheck: () => ({
          needed: Boolean(sale.humanCheck),
          token: this.humanCheck?.token(),
          reset: () => this.humanCheck?.reset(),
        }),
        accessCode: () => this.lanes?.code(),
        codeRefusal: (answer) => this.lanes?.refusal(answer, undefined),
      });
    }
    this.room?.render(sale, Boolean(sale.humanCheck));
    if (sale.draw && !this.drawPanel) this.drawPanel = this.newDrawPanel();
    this.drawPanel?.show(sale);
    if (sale.lanes?.length > 0 && !this.lanes) {
      this.lanes = new LanePanel(this.saleId, {
        changed: () => this.renderBuy(),
        news: (text) => {
          if (!this.buying && !this.orderId) this.say(text, "good");
        },
        entryTakesCode: () => this.drawPanel?.takesCode() ?? false,
      });
    }
    this.lanes?.show(sale);
    this.renderPrice();
    // An order found before the sale's first read names its size once the sale is known.
    if (first && this.order) this.renderOrder();
    this.renderBuy();
    this.tick();
    // A buyer waiting on the page hears the sale open, sell out or end; in a waiting room the
    // room's own line says what the opening means for them (their turn has not come yet).
    // A draw's panel says what the sale's start means there (its winners pay).
    const saysItself = (this.room && sale.status === "live") || sale.draw;
    if (previous && previous.status !== sale.status && !this.buying && !this.orderId && !saysItself) {
      const news = SALE_STATES[sale.status];
      if (news) this.say(news, sale.status === "live" ? "good" : "bad");
    }
  }

  /**
   * The shop's word during a drop, on the sale page and in its waiting room: the line's poll
   * carries the newest to those waiting (read every second or so), the sale's page to everyone.
   */
  renderOperatorNotice() {
    const fromLine = this.room?.notice();
    const notice = fromLine === undefined ? (this.sale?.notice ?? null) : fromLine;
    $("operator-notice").hidden = !notice;
    setText("operator-notice", notice ? `From the shop: ${notice}` : "");
  }

  /** The draw's panel, lent what it needs of the page. */
  newDrawPanel() {
    return new DrawPanel(API, this.saleId, {
      token: () => identity.token ?? "",
      signInNote: () =>
        config.devLogin
          ? "Sign in above to enter."
          : identity.shopProvidesToken
            ? "Waiting for your sign-in from the shop…"
            : "Sign in at the shop to enter.",
      say: (text, tone) => this.say(text, tone),
      tokenRefused: (then) => this.tokenRefused(then),
      orderId: () => this.orderId,
      follow: (orderId) => void this.follow(orderId),
      humanCheck: () => ({
        token: this.humanCheck?.token(),
        reset: () => this.humanCheck?.reset(),
        trouble: this.humanCheckTrouble,
      }),
      accessCode: () => this.lanes?.code(),
      codeRefusal: (answer) => this.lanes?.refusal(answer, undefined),
    });
  }

  /**
   * The check beside what asks for it: Enter in a draw, Join the line in a waiting room (the
   * pass carries it to checkout), else Buy.
   * @param {any} sale
   */
  showHumanCheck(sale) {
    this.humanCheck = humanCheckFor(config);
    const queued = sale.queue && sale.queue.mode !== "off";
    const container = $(sale.draw ? "draw-human-check" : queued ? "queue-human-check" : "human-check");
    const trouble = (/** @type {string} */ why) => {
      this.humanCheckTrouble = why;
      this.say(why, "bad");
      this.renderBuy();
    };
    if (!this.humanCheck)
      return trouble("This sale asks for a human check that this shop has not set up: it cannot be bought here.");
    this.humanCheck
      .show(container, sale.id, () => this.renderBuy())
      .catch(() => trouble("The human check could not be loaded: reload the page to try again."));
  }

  renderPrice() {
    const sale = this.sale;
    if (!sale || typeof sale.price !== "number" || !sale.currency) return;
    const quantity = Number(/** @type {HTMLSelectElement} */ ($("quantity")).value) || 1;
    const price = variantOf(sale, chosenVariant())?.price ?? sale.price;
    const unit = formatMoney(price, sale.currency);
    $("sale-price").textContent = quantity > 1 ? `${formatMoney(price * quantity, sale.currency)} (${quantity} × ${unit})` : unit;
    $("sale-price").hidden = false;
  }

  /** Why Buy cannot be pressed now, or "" when it can. */
  blocker() {
    const sale = this.sale;
    if (!sale) return "Loading…";
    if (!identity.token) {
      if (config.devLogin) return "Sign in above to buy.";
      return identity.shopProvidesToken ? "Waiting for your sign-in from the shop…" : "Sign in at the shop to buy.";
    }
    if (this.buying) return "Working on it…";
    const status = this.order?.status;
    // One order at a time; and where a buyer may hold one unit only, a held one is the end.
    if (status && (OPEN_ORDER_STATES.has(status) || (HELD_ORDER_STATES.has(status) && !(sale.perUserLimit > 1)))) {
      return "You hold an order in this sale (below).";
    }
    if (sale.status !== "live" && sale.status !== "upcoming")
      return SALE_STATES[sale.status] ?? `The sale is ${words(sale.status)}.`;
    if (this.room && !this.room.admitted()) {
      if (this.room.bought) return "You bought on your turn: each turn buys once.";
      return this.room.passExpiresAt === undefined
        ? "Buy opens on your turn in the waiting room."
        : "Your turn to buy has passed.";
    }
    // In a presale lane's window, code holders buy before the public start.
    if (sale.status === "upcoming") {
      const inLane = this.lanes?.blocker();
      if (inLane !== "") return inLane ?? "Opens when the countdown ends.";
    }
    // A queued sale asked for the check at the join: its pass carries it.
    if (sale.humanCheck && !this.room && !this.humanCheck?.token())
      return this.humanCheckTrouble || "Complete the check beside Buy first.";
    if (hasVariants(sale) && !chosenVariant()) return "Choose a size first.";
    return "";
  }

  renderBuy() {
    const why = this.blocker();
    // aria-disabled rather than disabled: the button keeps focus, and says why on it.
    $("buy-button").setAttribute("aria-disabled", String(why !== ""));
    $("buy-note").textContent = why;
    this.drawPanel?.paint();
  }

  /** Once every 250 ms: the countdowns, by the server's clock. */
  tick() {
    if (this.sale) this.room?.render(this.sale, Boolean(this.sale.humanCheck));
    this.drawPanel?.paint();
    this.lanes?.paint();
    const sale = this.sale;
    if (sale) {
      const now = serverNow();
      const starts = Date.parse(sale.startsAt);
      const ends = Date.parse(sale.endsAt);
      const upcoming = now < starts;
      const panelClock = this.drawPanel?.clock() ?? this.lanes?.clock();
      if (sale.status === "cancelled") {
        setText("clock-label", "Cancelled");
        setText("clock", "–");
      } else if (panelClock) {
        setText("clock-label", panelClock.label);
        setText("clock", formatDuration(panelClock.ms));
      } else {
        setText("clock-label", upcoming ? "Starts in" : now < ends ? "Ends in" : "Ended");
        setText("clock", now < ends ? formatDuration((upcoming ? starts : ends) - now) : "00:00");
      }
    }
    const expiresAt = this.order?.status === "awaiting_payment" && this.order.expiresAt ? Date.parse(this.order.expiresAt) : NaN;
    if (Number.isFinite(expiresAt)) setText("order-expiry", formatDuration(expiresAt - serverNow()));
  }

  /** The API refused the token (expired): say so, and ask for a fresh one. */
  async tokenRefused(/** @type {string} */ then) {
    this.say(`Your sign-in has expired: sign in again, then ${then}.`, "bad");
    await identity.expired();
  }

  async buy() {
    if (this.blocker() !== "") return;
    const quantity = Number(/** @type {HTMLSelectElement} */ ($("quantity")).value) || 1;
    const variant = hasVariants(this.sale) ? chosenVariant() : undefined;
    // One key per purchase, sent with every retry of it: whatever the network loses, a
    // retry never buys twice (a buyer holding an order gets ALREADY_PURCHASED naming it).
    const key = idempotencyKey();
    // A token passes once: this purchase's retries send it again (a refusal asks for a fresh check).
    const humanCheckToken = this.room ? undefined : this.humanCheck?.token();
    // The code typed, while a lane is open (from the public start none is asked for).
    const accessCode = this.lanes?.code();
    this.buying = true;
    this.renderBuy();
    this.say("Buying…", "wait");
    let troubles = 0;
    try {
      while (!this.stopped) {
        const answer = await call(API, `/api/sales/${this.saleId}/checkout`, {
          method: "POST",
          token: identity.token,
          body: { quantity, ...(variant && { variant }) },
          headers: {
            "Idempotency-Key": key,
            ...(this.room?.pass && { "Queue-Pass": this.room.pass }),
            ...(humanCheckToken && { "Human-Check": humanCheckToken }),
            ...(accessCode && { "Access-Code": accessCode }),
          },
        });
        if (answer.status === 202) {
          this.room?.used();
          this.say(`Accepted: order ${answer.body.orderId} is reserved for you and being confirmed.`, "good");
          void this.follow(answer.body.orderId);
          return;
        }
        // A refusal about the lanes (a code, a lane's units) is said in their words, and ends the purchase.
        const laneRefusal = this.lanes?.refusal(answer, variant && variantOf(this.sale, variant)?.label);
        if (laneRefusal) {
          this.say(laneRefusal, "bad");
          return;
        }
        if (answer.status === 429) {
          const wait = (answer.retryAfterMs || 1000) + jitterMs();
          this.say(`Many buyers right now: trying again in ${Math.ceil(wait / 1000)} s. Keep this page open.`, "wait");
          await sleep(wait);
          continue;
        }
        if (answer.status === 0 || answer.status === 503) {
          troubles += 1;
          if (troubles > 6) {
            this.say("The sale cannot be reached right now. Please try again in a minute.", "bad");
            return;
          }
          const wait = (answer.retryAfterMs || Math.min(8000, 500 * 2 ** troubles)) + jitterMs();
          this.say(`Connection trouble: trying again in ${Math.ceil(wait / 1000)} s (a retry never buys twice).`, "wait");
          await sleep(wait);
          continue;
        }
        if (answer.status === 401) return await this.tokenRefused("buy");
        if (answer.code === "ALREADY_PURCHASED") {
          // The API names the order the buyer holds in its message ("... order <id> ...").
          const held = /order (\d+)/.exec(answer.message)?.[1];
          this.say(held ? `You already hold order ${held} in this sale.` : "You already hold an order in this sale.", "good");
          if (held) void this.follow(held);
          return;
        }
        // A sold-out size is not the sale sold out: say which, so the buyer picks another.
        const soldOutSize = answer.code === "SOLD_OUT" && variant ? variantOf(this.sale, variant) : undefined;
        const refusal = soldOutSize ? `${soldOutSize.label} is sold out: choose another size.` : REFUSALS[answer.code];
        this.say(refusal ?? `Not bought: ${answer.message}`, "bad");
        return;
      }
    } finally {
      this.buying = false;
      if (!this.room) this.humanCheck?.reset();
      this.renderBuy();
    }
  }

  /**
   * Shows the order and follows it to its end (a reload finds it again: held-order.js).
   * @param {string} orderId @param {any} [view] the order as already read, said at once
   */
  async follow(orderId, view) {
    this.orderId = orderId;
    rememberFollowed(this.saleId, identity.userId, orderId);
    this.order = view ?? { orderId, status: "pending" };
    this.renderOrder();
    if (view) this.sayOrder();
    let polls = 0;
    let announced = this.order.status;
    while (!this.stopped && this.orderId === orderId && OPEN_ORDER_STATES.has(this.order.status)) {
      await sleep(polls++ < 20 ? 1000 : 3000);
      if (this.stopped || this.orderId !== orderId) return;
      const answer = await call(API, `/api/orders/${orderId}`, { token: identity.token });
      if (answer.status === 200) {
        this.order = answer.body;
        this.renderOrder();
        if (this.order.status !== announced) {
          announced = this.order.status;
          this.sayOrder();
        }
      } else if (answer.status === 401) {
        return await this.tokenRefused("see your order");
      } else if (answer.status === 404 && answer.code === "ORDER_NOT_FOUND") {
        this.say(`Order ${orderId} cannot be found.`, "bad");
        return;
      } else if (answer.retryAfterMs) {
        await sleep(answer.retryAfterMs);
      }
    }
  }

  sayOrder() {
    const { status, refundDue, failureReason } = this.order;
    const text = ORDER_STATES[status] ?? `Your order is ${words(status)}.`;
    const refund = refundDue
      ? status === "paid"
        ? " You were charged twice: the second charge will be refunded."
        : " Your late payment will be refunded."
      : "";
    const why =
      failureReason === "REDIS_ROLLBACK"
        ? " Our stock records were briefly out of date when you ordered, and this unit had already been sold."
        : "";
    this.say(`${text}${why}${refund}`, status === "failed" || status === "expired" || status === "cancelled" ? "bad" : "good");
  }

  renderOrder() {
    const order = this.order;
    $("order").hidden = false;
    // The reference, to read out on the phone, beside the id (the checkout's answer has the id alone until the order is read).
    $("order-reference").textContent = order.reference ?? "";
    $("order-id").textContent = order.orderId;
    const state = $("order-state");
    state.dataset.state = order.status;
    state.textContent = words(order.status);
    const showField = (/** @type {string} */ id, /** @type {string | undefined} */ value) => {
      $(`${id}-label`).hidden = value === undefined;
      $(id).hidden = value === undefined;
      if (value !== undefined) $(id).textContent = value;
    };
    const variant = hasVariants(this.sale) && order.variant ? variantOf(this.sale, order.variant) : undefined;
    showField("order-product", order.saleName ?? this.sale?.name);
    showField("order-variant", order.variantLabel ?? variant?.label);
    showField("order-quantity", typeof order.quantity === "number" ? String(order.quantity) : undefined);
    showField(
      "order-amount",
      typeof order.amount === "number" && order.currency ? formatMoney(order.amount, order.currency) : undefined,
    );
    const awaiting = order.status === "awaiting_payment";
    showField(
      "order-expiry",
      awaiting && order.expiresAt ? formatDuration(Date.parse(order.expiresAt) - serverNow()) : undefined,
    );
    // The pay form holds Cancel too: both are for an order awaiting payment only.
    $("pay").hidden = !awaiting;
    if (awaiting) {
      // Locally (DEV_LOGIN) the dev provider's test cards are offered as choices; otherwise
      // the page takes the token the shop's payment form gave.
      $("test-cards").hidden = !config.devLogin;
      $("token-field").hidden = config.devLogin;
      /** @type {HTMLInputElement} */ ($("payment-token")).required = !config.devLogin;
      const amount = typeof order.amount === "number" && order.currency ? ` ${formatMoney(order.amount, order.currency)}` : "";
      setText("pay-button", `Pay${amount}`);
    }
    this.renderBuy();
  }

  /** @param {string} paymentToken */
  async pay(paymentToken) {
    if (!this.orderId || !paymentToken || this.paying) return;
    this.paying = true;
    $("pay-button").setAttribute("aria-disabled", "true");
    try {
      await this.payOnce(this.orderId, paymentToken);
    } finally {
      this.paying = false;
      $("pay-button").setAttribute("aria-disabled", "false");
    }
  }

  /** @param {string} orderId @param {string} paymentToken */
  async payOnce(orderId, paymentToken) {
    // One key for this payment and its retries: a provider that timed out never charges twice.
    const key = idempotencyKey();
    this.say("Paying…", "wait");
    for (let tries = 1; !this.stopped; tries++) {
      const answer = await call(API, `/api/orders/${orderId}/pay`, {
        method: "POST",
        token: identity.token,
        body: { paymentToken },
        headers: { "Idempotency-Key": key },
      });
      if (answer.status === 200) {
        this.order = answer.body;
        this.renderOrder();
        this.sayOrder();
        return;
      }
      if ((answer.status === 0 || answer.status === 503) && tries < 4) {
        this.say("The payment is taking long: trying again (you will not be charged twice).", "wait");
        await sleep(answer.retryAfterMs || 2000);
        continue;
      }
      if (answer.status === 401) return await this.tokenRefused("pay");
      if (answer.code === "PAYMENT_DECLINED") {
        return this.say("The payment was declined: nothing was charged. Try another card before the time runs out.", "bad");
      }
      if (answer.code === "PAYMENT_IN_PROGRESS") {
        // Another payment for this order (another tab, another device) holds it; the order is
        // followed, so its outcome shows here when it ends.
        return this.say(
          "Payment in progress: another payment for this order is being processed, and nothing was charged by this one. Its outcome shows here.",
          "wait",
        );
      }
      return this.say(`Not paid: ${answer.message}`, "bad");
    }
  }

  async cancel() {
    if (!this.orderId) return;
    const answer = await call(API, `/api/orders/${this.orderId}/cancel`, { method: "POST", token: identity.token });
    if (answer.status === 200) {
      this.order = answer.body;
      this.renderOrder();
      this.sayOrder();
    } else if (answer.status === 401) {
      await this.tokenRefused("cancel");
    } else {
      this.say(`Not cancelled: ${answer.message}`, "bad");
    }
  }
}

/** @returns {any} the sale's variant of this id */
const variantOf = (/** @type {any} */ sale, /** @type {string | undefined} */ id) =>
  sale?.variants?.find((/** @type {any} */ v) => v.id === id);

/** The variant the buyer picked, if any. */
function chosenVariant() {
  const chosen = /** @type {HTMLInputElement | null} */ (document.querySelector('input[name="variant"]:checked'));
  return chosen?.value || undefined;
}

/**
 * The size picker: one radio per variant with what is left of it, a sold-out one disabled and
 * saying so in words (a screen reader reads the label). Built again only when the variants
 * change, so a poll never moves the buyer's focus; a pick that sold out is let go.
 * @param {any} sale
 */
function renderVariants(sale) {
  const field = $("variant-field");
  field.hidden = !hasVariants(sale);
  if (field.hidden) return;
  const box = $("variants");
  const ids = sale.variants.map((/** @type {any} */ v) => v.id).join("\n");
  if (box.dataset.ids !== ids) {
    box.dataset.ids = ids;
    box.replaceChildren(
      ...sale.variants.map((/** @type {any} */ v) => {
        const input = document.createElement("input");
        input.type = "radio";
        input.name = "variant";
        input.value = v.id;
        const text = document.createElement("span");
        const label = document.createElement("label");
        label.append(input, text);
        return label;
      }),
    );
  }
  for (const label of box.children) {
    const input = /** @type {HTMLInputElement} */ (label.querySelector("input"));
    const v = variantOf(sale, input.value);
    input.disabled = v.soldOut;
    if (v.soldOut) input.checked = false;
    const said = v.soldOut ? `${v.label}, sold out` : `${v.label}, ${v.remaining} left`;
    const text = /** @type {HTMLElement} */ (label.querySelector("span"));
    if (text.textContent !== said) text.textContent = said;
  }
}

/** The payment token chosen: a test card where they are offered, else the one typed in. */
function chosenPaymentToken() {
  if (config.devLogin) {
    const chosen = /** @type {HTMLInputElement | null} */ (document.querySelector('input[name="testToken"]:checked'));
    return chosen?.value ?? "";
  }
  return /** @type {HTMLInputElement} */ ($("payment-token")).value.trim();
}

/** Writes text only when it changed: no needless repaint or announcement. */
function setText(/** @type {string} */ id, /** @type {string} */ text) {
  const node = $(id);
  if (node.textContent !== text) node.textContent = text;
}

// ---------------------------------------------------------------------------------------
// Start: learn the deployment's settings and the buyer's token, then draw the page once.

async function start() {
  const answer = await call(API, "/api/config");
  if (answer.status === 200) config = answer.body;
  await identity.start(config.allowedOrigins);
  renderAccount();
  route();
}

void start();
