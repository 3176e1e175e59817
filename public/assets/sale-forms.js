// @ts-check
// The console's "Create and edit" section: a new sale from the create form (POST /admin/sales,
// with an Idempotency-Key kept across retries of the same form), and the watched sale edited
// (PATCH with If-Match on the version the form loaded; only the fields that changed are sent).
// Prices are typed in the currency's units (lib/money.js) and variants as rows (variant-rows.js).
// After a create the form starts empty again; "Copy this sale" fills it from a sale on purpose.
import { idempotencyKey } from "./lib/api.js";
import { $, FormProblem, say, showProblem } from "./lib/console-page.js";
import { words } from "./lib/format.js";
import { fromMinorUnits, isCurrency, priceHint, toMinorUnits } from "./lib/money.js";
import { VariantRows } from "./variant-rows.js";

/** @typedef {import("./order-events.js").AdminCall} AdminCall */
/** @typedef {(path: string, options?: { method?: string, body?: unknown, headers?: Record<string, string> }) => Promise<import("./lib/api.js").Answer>} AdminCallWithHeaders */

/** The API's bounds on a sale's variants (src/shared/limits.ts, VARIANT_COUNT). */
const VARIANTS = { min: 2, max: 50 };

/** @param {string} id */
const field = (id) => /** @type {HTMLInputElement} */ ($(id));

/** A datetime-local value for a moment, in this browser's time zone. @param {number} ms */
export function localInput(ms) {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

/** A sale made in variants (one named "default" alone is a sale without). @param {any} sale */
export const hasVariants = (sale) =>
  (sale.variants ?? []).length > 1 || (sale.variants?.[0] && sale.variants[0].id !== "default");

/** A whole number typed in a field, or undefined when it is empty. @param {HTMLInputElement} input @param {string} what */
function wholeNumber(input, what) {
  const text = input.value.trim();
  if (text === "") return undefined;
  const n = Number(text);
  if (!Number.isInteger(n)) throw new FormProblem(`${what} is a whole number.`, input);
  return n;
}

/** A datetime-local field as an ISO moment. @param {HTMLInputElement} input */
function moment(input) {
  const ms = Date.parse(input.value);
  if (!Number.isFinite(ms)) throw new FormProblem("Give both the start and the end.", input);
  return new Date(ms).toISOString();
}

/** The checkout pace, when given: both figures or neither. @param {HTMLInputElement} rate @param {HTMLInputElement} burst */
function admissionOf(rate, burst) {
  const perSecond = wholeNumber(rate, "Checkouts let in per second");
  const atOnce = wholeNumber(burst, "Checkouts let in at once");
  if (perSecond === undefined && atOnce === undefined) return undefined;
  if (perSecond === undefined || atOnce === undefined) {
    throw new FormProblem(
      "Give both figures of the checkout pace (per second and at once), or neither.",
      perSecond === undefined ? rate : burst,
    );
  }
  return { rate: perSecond, burst: atOnce };
}

/**
 * The section's two forms.
 * @param {AdminCallWithHeaders} admin the console's admin caller (it locks the console on a 401)
 * @param {{ created: (sale: any) => void, saved: (sale: any) => void, watched: () => string | undefined }} hooks
 *   what the rest of the console hears: a sale created, an edit saved; which sale it watches
 */
export function saleForms(admin, hooks) {
  // -------------------------------------------------------------------------------------
  // Creating

  const createForm = /** @type {HTMLFormElement} */ ($("create-form"));
  const currency = () => field("sale-currency").value.trim().toUpperCase();
  const createRows = new VariantRows({
    body: $("sale-variant-rows"),
    table: $("sale-variant-table"),
    add: /** @type {HTMLButtonElement} */ ($("sale-add-variant")),
    currency,
    changed: () => renderCreateHints(),
  });

  /** The key of the sale being created: kept across retries of the same form, new once it changes. */
  let createKey = idempotencyKey();
  createForm.addEventListener("input", () => {
    createKey = idempotencyKey();
    renderCreateHints();
  });

  /** The price's hint follows the currency; with variants, the stock is their sum. */
  function renderCreateHints() {
    say("sale-price-hint", priceHint(field("sale-price").value, currency()));
    const sized = createRows.rows().length > 0;
    field("sale-stock").disabled = sized;
    if (sized) field("sale-stock").value = String(createRows.stockSum());
  }

  function setDefaultWindow() {
    const inAMinute = Math.ceil((Date.now() + 60_000) / 60_000) * 60_000;
    field("sale-starts").value = localInput(inAMinute);
    field("sale-ends").value = localInput(inAMinute + 3_600_000);
  }

  /** The form as it starts: nothing of the last sale, a window from the next minute. */
  function resetCreate() {
    createForm.reset();
    createRows.clear();
    setDefaultWindow();
    renderCreateHints();
    createKey = idempotencyKey();
  }

  /**
   * The request body: required fields, and each optional one only when filled in.
   * @throws {FormProblem}
   */
  function createBody() {
    const data = new FormData(createForm);
    const text = (/** @type {string} */ name) => String(data.get(name) ?? "").trim();
    if (!isCurrency(currency()))
      throw new FormProblem("The currency is three letters, such as EUR or USD.", field("sale-currency"));
    let price;
    try {
      price = toMinorUnits(field("sale-price").value, currency());
    } catch (err) {
      throw new FormProblem(`Not a price: ${/** @type {Error} */ (err).message}.`, field("sale-price"));
    }
    const variants = createRows.read().map(({ kept, ...variant }) => variant);
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
    return body;
  }

  createForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    let body;
    try {
      body = createBody();
    } catch (err) {
      if (err instanceof FormProblem) return showProblem("create-status", err);
      throw err;
    }
    say("create-status", "Creating…", "wait");
    const answer = await admin("/admin/sales", { method: "POST", body, headers: { "Idempotency-Key": createKey } });
    if (answer.status === 201 || answer.status === 200) {
      const sale = answer.body;
      resetCreate();
      say("create-status", `${answer.status === 201 ? "Created" : "Already created"}: sale ${sale.id}, ${sale.name}.`, "good");
      hooks.created(sale);
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
    resetCreate();
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
    if (hasVariants(sale)) {
      for (const v of sale.variants) {
        createRows.add({ id: v.id, label: v.label, stock: v.stock, ...(v.price !== sale.price && { price: v.price }) });
      }
    } else {
      field("sale-stock").value = String(sale.stock);
    }
    renderCreateHints();
    say("create-status", `Copied from sale ${sale.id}: check the name and the window, then create.`, "good");
  }

  // -------------------------------------------------------------------------------------
  // Editing the watched sale

  /** @type {any} the sale as the edit form loaded it (its version is what If-Match names) */
  let editing;
  /** An edit answered 503: recorded in D1, finished by sending it again. @type {string | undefined} */
  let unfinishedEdit;
  const editRows = new VariantRows({
    body: $("edit-variant-rows"),
    table: $("edit-variant-table"),
    add: /** @type {HTMLButtonElement} */ ($("edit-add-variant")),
    currency: () => editing?.currency ?? "USD",
  });

  /** The fields the form edits, as the API writes them. @param {any} sale */
  const editable = (sale) => ({
    name: sale.name,
    description: sale.description ?? "",
    imageUrl: sale.imageUrl ?? null,
    stock: sale.stock,
    startsAt: Date.parse(sale.startsAt),
    endsAt: Date.parse(sale.endsAt),
    admission: { rate: sale.admission?.rate, burst: sale.admission?.burst },
    humanCheck: Boolean(sale.humanCheck),
    variants: hasVariants(sale) ? sale.variants.map((/** @type {any} */ v) => [v.id, v.label, v.stock, v.price]) : [],
  });

  /** Whether two reads of a sale agree on every field the form edits. @param {any} a @param {any} b */
  const sameEditable = (a, b) => JSON.stringify(editable(a)) === JSON.stringify(editable(b));

  const started = () => Date.now() >= Date.parse(editing.startsAt);
  const closed = () => editing.status === "ended" || editing.status === "cancelled";

  /** @param {any} sale */
  function loadEdit(sale) {
    editing = sale;
    unfinishedEdit = undefined;
    $("edit-none").hidden = true;
    $("edit-form").hidden = false;
    $("edit-sale-id").textContent = sale.id;
    field("edit-name").value = sale.name;
    field("edit-description").value = sale.description ?? "";
    field("edit-image").value = sale.imageUrl ?? "";
    field("edit-stock").value = String(sale.stock);
    $("edit-variants").hidden = !hasVariants(sale);
    editRows.clear();
    if (hasVariants(sale)) {
      for (const v of sale.variants) editRows.add(v, { kept: true, priceFixed: started() });
    }
    field("edit-starts").value = localInput(Date.parse(sale.startsAt));
    field("edit-ends").value = localInput(Date.parse(sale.endsAt));
    field("edit-rate").value = String(sale.admission?.rate ?? "");
    field("edit-burst").value = String(sale.admission?.burst ?? "");
    field("edit-human-check").checked = Boolean(sale.humanCheck);
    renderEditLimits();
  }

  /**
   * A newer read of the sale being edited: when only what the form does not edit moved (its
   * state, its remaining stock), the form takes the new version, so the admin's own pause does
   * not make the next save a conflict. When an edited field moved, the loaded version stays and
   * saving answers 412: someone else's change is never overwritten unseen.
   * @param {any} sale
   */
  function sawSale(sale) {
    if (!editing || editing.id !== sale.id || sale.version === editing.version) return;
    if (sameEditable(editing, sale)) {
      editing = sale;
      renderEditLimits();
    }
  }

  /** What the sale's state allows to change now. */
  function renderEditLimits() {
    $("edit-version").textContent = String(editing.version);
    /** @type {HTMLFieldSetElement} */ ($("edit-before-start")).disabled = started();
    $("edit-before-start-hint").textContent = started()
      ? "The sale has started: its window, checkout pace and human check are fixed."
      : "These change only until the sale starts.";
    field("edit-stock").min = String(editing.stock);
    // A sale in variants changes its stock variant by variant.
    field("edit-stock").disabled = closed() || hasVariants(editing);
    /** @type {HTMLFieldSetElement} */ ($("edit-variants")).disabled = closed();
    $("edit-add-variant").hidden = started();
    $("edit-stock-hint").textContent = closed()
      ? "The sale is over: its stock is fixed."
      : `At least ${editing.stock}: units can be added, never taken away.`;
  }

  /**
   * The fields that differ from the loaded sale, as PATCH takes them.
   * @throws {FormProblem}
   */
  function editBody() {
    /** @type {Record<string, unknown>} */
    const body = {};
    const name = field("edit-name").value.trim();
    if (name !== editing.name) body.name = name;
    const description = field("edit-description").value.trim();
    if (description !== (editing.description ?? "")) body.description = description;
    const imageUrl = field("edit-image").value.trim() || null;
    if (imageUrl !== (editing.imageUrl ?? null)) body.imageUrl = imageUrl;
    if (!field("edit-stock").disabled) {
      const stock = wholeNumber(field("edit-stock"), "The stock");
      if (stock !== editing.stock) body.stock = stock;
    }
    if (hasVariants(editing) && !(/** @type {HTMLFieldSetElement} */ ($("edit-variants")).disabled)) {
      // Only the rows that changed or are new: a variant not listed stays as it is.
      const before = new Map(editing.variants.map((/** @type {any} */ v) => [v.id, v]));
      const changed = editRows
        .read()
        .filter((v) => {
          const was = before.get(v.id);
          return !v.kept || was.label !== v.label || was.stock !== v.stock || (v.price !== undefined && v.price !== was.price);
        })
        .map(({ kept, ...variant }) => variant);
      if (changed.length > 0) body.variants = changed;
    }
    if (!(/** @type {HTMLFieldSetElement} */ ($("edit-before-start")).disabled)) {
      // datetime-local holds minutes: a field sent only when its minutes changed.
      for (const [id, key] of [
        ["edit-starts", "startsAt"],
        ["edit-ends", "endsAt"],
      ]) {
        if (field(id).value !== localInput(Date.parse(editing[key]))) body[key] = moment(field(id));
      }
      const admission = admissionOf(field("edit-rate"), field("edit-burst"));
      if (admission && (admission.rate !== editing.admission?.rate || admission.burst !== editing.admission?.burst)) {
        body.admission = admission;
      }
      const humanCheck = field("edit-human-check").checked;
      if (humanCheck !== Boolean(editing.humanCheck)) body.humanCheck = humanCheck;
    }
    return body;
  }

  /** Whether `sale` already holds every field of `body` (an edit recorded before a 503). @param {any} sale @param {Record<string, any>} body */
  function holds(sale, body) {
    const now = editable(sale);
    return Object.entries(body).every(([key, value]) => {
      if (key === "variants") {
        return value.every((/** @type {any} */ v) =>
          now.variants.some(
            (/** @type {any[]} */ [id, label, stock, price]) =>
              id === v.id && label === v.label && stock === v.stock && (v.price ?? price) === price,
          ),
        );
      }
      const wanted = key === "startsAt" || key === "endsAt" ? Date.parse(value) : value;
      return JSON.stringify(now[/** @type {keyof typeof now} */ (key)]) === JSON.stringify(wanted);
    });
  }

  /** Edit refusals in words; others show the server's message. */
  const EDIT_REFUSALS = /** @type {Record<string, string>} */ ({
    SALE_STARTED: "The sale has started: its window, checkout pace and human check can no longer change.",
    SALE_CLOSED: "The sale is over: its stock can no longer change.",
  });

  /** @param {string} saleId @param {Record<string, unknown>} body @param {number} version */
  const patch = (saleId, body, version) =>
    admin(`/admin/sales/${saleId}`, { method: "PATCH", body, headers: { "If-Match": `"${version}"` } });

  $("edit-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const saleId = editing?.id;
    if (!saleId || saleId !== hooks.watched()) return;
    let body;
    try {
      body = editBody();
    } catch (err) {
      if (err instanceof FormProblem) return showProblem("edit-status", err);
      throw err;
    }
    if (Object.keys(body).length === 0) return say("edit-status", "Nothing to save: no field changed.");
    say("edit-status", "Saving…", "wait");
    let version = editing.version;
    let answer = await patch(saleId, body, version);
    if (answer.status === 412 && unfinishedEdit === JSON.stringify(body)) {
      // The same edit after a 503: it is in D1 already (that is why the version moved) when the
      // sale holds every field of it; sending it on that version finishes it.
      const current = await admin(`/admin/sales/${saleId}/stats`);
      if (current.status === 200 && holds(current.body.sale, body)) {
        version = current.body.sale.version;
        answer = await patch(saleId, body, version);
      }
    }
    if (hooks.watched() !== saleId) return;
    unfinishedEdit = undefined;
    if (answer.status === 200) {
      loadEdit(answer.body);
      say("edit-status", `Saved: ${Object.keys(body).map(words).join(", ")} changed (version ${answer.body.version}).`, "good");
      hooks.saved(answer.body);
    } else if (answer.status === 412) {
      say(
        "edit-status",
        "The sale changed since you loaded it: reload it (your changes here are replaced), then edit again.",
        "bad",
      );
    } else if (answer.status === 503) {
      unfinishedEdit = JSON.stringify(body);
      say("edit-status", `Recorded, but not yet in force everywhere (${answer.message}). Press Save again to finish.`, "bad");
    } else if (answer.status === 0) {
      say("edit-status", "The server did not answer. Press Save again.", "bad");
    } else if (answer.status !== 401) {
      say("edit-status", EDIT_REFUSALS[answer.code] ?? `Not saved: ${answer.message}`, "bad");
    }
  });

  $("edit-reload").addEventListener("click", async () => {
    const saleId = hooks.watched();
    if (!saleId) return;
    const answer = await admin(`/admin/sales/${saleId}/stats`);
    if (hooks.watched() !== saleId) return;
    if (answer.status === 200) {
      loadEdit(answer.body.sale);
      say("edit-status", `Reloaded: version ${answer.body.sale.version}.`, "good");
    } else if (answer.status !== 401) {
      say("edit-status", `The sale cannot be read right now (${answer.message}).`, "bad");
    }
  });

  /** No sale in the edit form (until the watched one's first read loads it). */
  function forgetEdit() {
    editing = undefined;
    unfinishedEdit = undefined;
    editRows.clear();
    $("edit-form").hidden = true;
    $("edit-none").hidden = false;
    say("edit-status", "");
  }

  resetCreate();

  return {
    loadEdit,
    sawSale,
    copy,
    /** The watched sale changed: the edit form waits for its first read. */
    watching: forgetEdit,
    /** The console locked: both forms as at the start. */
    forget() {
      forgetEdit();
      resetCreate();
      say("create-status", "");
    },
  };
}
