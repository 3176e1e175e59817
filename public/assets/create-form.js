// @ts-check
// The console's create form: a new sale (POST /admin/sales, with an Idempotency-Key kept
// across retries of the same form). Prices are typed in the currency's units (lib/money.js),
// variants as rows (variant-rows.js), presale lanes as rows (lane-rows.js); a sale sold by
// draw takes its entries' window and, optionally, a beacon's round (drawSettings). After a create the form starts empty again: nothing of
// the last sale carries over unless the owner asks for it with "Copy this sale".

import { LaneRows } from "./lane-rows.js";
import { idempotencyKey } from "./lib/api.js";
import { $, FormProblem, say, showProblem } from "./lib/console-page.js";
import { fromMinorUnits, isCurrency, priceHint, toMinorUnits } from "./lib/money.js";
import { hasVariants } from "./lib/variants.js";
import { admissionOf, field, localInput, moment, VARIANTS, wholeNumber } from "./sale-fields.js";
import { VariantRows } from "./variant-rows.js";

/** @typedef {(path: string, options?: { method?: string, body?: unknown, headers?: Record<string, string> }) => Promise<import("./lib/api.js").Answer>} AdminCall */

/**
 * The create form.
 * @param {AdminCall} admin the console's admin caller (it locks the console on a 401)
 * @param {(sale: any) => void} created what the console does with a sale just created
 */
export function createForm(admin, created) {
  const form = /** @type {HTMLFormElement} */ ($("create-form"));
  const currency = () => field("sale-currency").value.trim().toUpperCase();
  const rows = new VariantRows({
    body: $("sale-variant-rows"),
    table: $("sale-variant-table"),
    add: /** @type {HTMLButtonElement} */ ($("sale-add-variant")),
    currency,
    changed: () => renderHints(),
  });
  const lanes = new LaneRows({
    body: $("sale-lane-rows"),
    table: $("sale-lane-table"),
    add: /** @type {HTMLButtonElement} */ ($("sale-add-lane")),
  });

  /** The key of the sale being created: kept across retries of the same form, new once it changes. */
  let key = idempotencyKey();
  form.addEventListener("input", () => {
    key = idempotencyKey();
    renderHints();
  });

  /** The price's hint follows the currency; with variants, the stock is their sum. */
  function renderHints() {
    say("sale-price-hint", priceHint(field("sale-price").value, currency()));
    const sized = rows.rows().length > 0;
    field("sale-stock").disabled = sized;
    if (sized) field("sale-stock").value = String(rows.stockSum());
  }

  function setDefaultWindow() {
    const inAMinute = Math.ceil((Date.now() + 60_000) / 60_000) * 60_000;
    field("sale-starts").value = localInput(inAMinute);
    field("sale-ends").value = localInput(inAMinute + 3_600_000);
  }

  /** The draw's fields show with "Sold by draw"; entries open now and close at the start unless given. */
  function renderDraw() {
    const draw = field("sale-draw").checked;
    $("sale-draw-fields").hidden = !draw;
    if (!draw) return;
    if (!field("sale-draw-opens").value) field("sale-draw-opens").value = localInput(Date.now());
    if (!field("sale-draw-closes").value) field("sale-draw-closes").value = field("sale-starts").value;
  }
  field("sale-draw").addEventListener("change", renderDraw);

  /** The form as it starts: nothing of the last sale, a window from the next minute. */
  function reset() {
    form.reset();
    rows.clear();
    lanes.clear();
    setDefaultWindow();
    renderDraw();
    renderHints();
    key = idempotencyKey();
  }

  /**
   * The request body: required fields, and each optional one only when filled in.
   * @throws {FormProblem}
   */
  function createBody() {
    const data = new FormData(form);
    const text = (/** @type {string} */ name) => String(data.get(name) ?? "").trim();
    if (!isCurrency(currency()))
      throw new FormProblem("The currency is three letters, such as EUR or USD.", field("sale-currency"));
    let price;
    try {
      price = toMinorUnits(field("sale-price").value, currency());
    } catch (err) {
      throw new FormProblem(`Not a price: ${/** @type {Error} */ (err).message}.`, field("sale-price"));
    }
    const variants = rows.read().map(({ kept, ...variant }) => variant);
    if (variants.length === 1 || variants.length > VARIANTS.max) {
      throw new FormProblem(
        `A sale in variants has ${VARIANTS.min} to ${VARIANTS.max} of them; with one, remove it and give the stock instead.`,
        /** @type {HTMLElement} */ ($("sale-add-variant")),
      );
    }
    /** @type {Record<string, unknown>} */
    const body = {
      name: text("name"),
      ...(variants.length > 0 ? { variants } : { stock: wholeNumber(field("sale-stock"), "The stock") }),
      startsAt: moment(field("sale-starts")),
      endsAt: moment(field("sale-ends")),
      currency: currency(),
    };
    if (price !== undefined) body.price = price;
    const admission = admissionOf(field("sale-rate"), field("sale-burst"));
    if (admission) body.admission = admission;
    const window = wholeNumber(field("sale-window"), "The time to pay");
    if (window !== undefined) body.paymentWindowSec = window;
    const limit = wholeNumber(field("sale-limit"), "Units per buyer");
    if (limit !== undefined) body.perUserLimit = limit;
    for (const name of ["imageUrl", "description"]) if (text(name)) body[name] = text(name);
    if (text("queueMode") !== "off") {
      /** @type {Record<string, unknown>} */
      const queue = { mode: text("queueMode") };
      for (const [name, id, what] of [
        ["prequeueSec", "sale-prequeue", "The time the line opens before the start"],
        ["admitPerSec", "sale-admit", "Places let in per second"],
        ["passTtlSec", "sale-pass-ttl", "The time to buy once let in"],
      ]) {
        const value = wholeNumber(field(id), what);
        if (value !== undefined) queue[name] = value;
      }
      body.queue = queue;
    }
    if (data.get("humanCheck")) body.humanCheck = true;
    const draw = data.get("draw") ? drawSettings(body) : undefined;
    if (draw) body.draw = draw;
    const laneList = lanes.read(Date.parse(String(body.startsAt)), draw && Date.parse(draw.closesAt));
    if (laneList.length > 0) body.lanes = laneList;
    return body;
  }

  /**
   * The draw's settings, checked against the sale's start and waiting room as the API checks them.
   * @param {Record<string, unknown>} body the sale as created so far
   * @throws {FormProblem}
   */
  function drawSettings(body) {
    const missing = "Give when entries open and when they close.";
    const opensAt = moment(field("sale-draw-opens"), missing);
    const closesAt = moment(field("sale-draw-closes"), missing);
    if (Date.parse(closesAt) <= Date.parse(opensAt))
      throw new FormProblem("Entries close after they open.", field("sale-draw-closes"));
    if (Date.parse(closesAt) > Date.parse(String(body.startsAt)))
      throw new FormProblem(
        "Entries close at or before the sale starts: the winners pay from the start.",
        field("sale-draw-closes"),
      );
    if (body.queue)
      throw new FormProblem(
        "A sale sold by draw has no waiting room: set its mode to Off.",
        /** @type {HTMLElement} */ ($("sale-queue-mode")),
      );
    const url = field("sale-beacon-url").value.trim();
    const round = wholeNumber(field("sale-beacon-round"), "The beacon round");
    if ((url === "") !== (round === undefined))
      throw new FormProblem(
        "Give the beacon's URL and its round, or neither.",
        field(url ? "sale-beacon-round" : "sale-beacon-url"),
      );
    return { opensAt, closesAt, ...(url && { beacon: { url, round } }) };
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let body;
    try {
      body = createBody();
    } catch (err) {
      if (err instanceof FormProblem) return showProblem("create-status", err);
      throw err;
    }
    say("create-status", "Creating…", "wait");
    const answer = await admin("/admin/sales", { method: "POST", body, headers: { "Idempotency-Key": key } });
    if (answer.status === 201 || answer.status === 200) {
      const sale = answer.body;
      reset();
      say("create-status", `${answer.status === 201 ? "Created" : "Already created"}: sale ${sale.id}, ${sale.name}.`, "good");
      created(sale);
    } else if (answer.status === 0 || answer.status === 503) {
      say("create-status", "The server did not answer. Press Create again: the same request never creates two sales.", "bad");
    } else if (answer.status !== 401) {
      say("create-status", `Not created: ${answer.message}`, "bad");
    }
  });

  /**
   * The create form filled from `sale` (its window from the next minute): the owner's explicit
   * "Copy this sale", never a leftover of the last create.
   * @param {any} sale
   */
  function copy(sale) {
    reset();
    field("sale-name").value = sale.name;
    field("sale-description").value = sale.description ?? "";
    field("sale-image").value = sale.imageUrl ?? "";
    field("sale-currency").value = sale.currency;
    field("sale-price").value = fromMinorUnits(sale.price, sale.currency);
    field("sale-limit").value = String(sale.perUserLimit);
    field("sale-window").value = String(sale.paymentWindowSec);
    field("sale-rate").value = String(sale.admission?.rate ?? "");
    field("sale-burst").value = String(sale.admission?.burst ?? "");
    field("sale-human-check").checked = Boolean(sale.humanCheck);
    const queue = sale.queue ?? { mode: "off" };
    /** @type {HTMLSelectElement} */ ($("sale-queue-mode")).value = queue.mode;
    if (queue.mode !== "off") {
      field("sale-prequeue").value = String(queue.prequeueSec);
      field("sale-admit").value = String(queue.admitPerSec);
      field("sale-pass-ttl").value = String(queue.passTtlSec);
    }
    // A draw's window is new for each sale (it opens now and closes at the start); its beacon's round must be one still to come.
    field("sale-draw").checked = Boolean(sale.draw);
    renderDraw();
    if (sale.draw?.beacon) field("sale-beacon-url").value = sale.draw.beacon.url;
    if (hasVariants(sale)) {
      for (const v of sale.variants) {
        rows.add({ id: v.id, label: v.label, stock: v.stock, ...(v.price !== sale.price && { price: v.price }) });
      }
    } else {
      field("sale-stock").value = String(sale.stock);
    }
    // A lane keeps its name and units; when it opens is new for each sale, as the window is.
    for (const lane of sale.lanes ?? []) lanes.add({ name: lane.name, stock: lane.stock });
    renderHints();
    const opens = sale.lanes?.length > 0 ? ", give each lane the time it opens" : "";
    say("create-status", `Copied from sale ${sale.id}: check the name and the window${opens}, then create.`, "good");
  }

  reset();

  return {
    copy,
    /** The console locked: the form as at the start. */
    forget() {
      reset();
      say("create-status", "");
    },
  };
}
