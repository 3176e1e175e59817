// @ts-check
// The console's edit form for the watched sale: PATCH with If-Match on the version the form
// loaded, only the fields that changed sent, so someone else's change is never overwritten
// unseen (412 until reloaded). Prices in the currency's units, variants as rows.
import { $, FormProblem, say, showProblem } from "./lib/console-page.js";
import { words } from "./lib/format.js";
import { hasVariants } from "./lib/variants.js";
import { admissionOf, field, localInput, moment, wholeNumber } from "./sale-fields.js";
import { VariantRows } from "./variant-rows.js";

/** @typedef {import("./create-form.js").AdminCall} AdminCall */

/**
 * The edit form.
 * @param {AdminCall} admin the console's admin caller (it locks the console on a 401)
 * @param {{ saved: (sale: any) => void, watched: () => string | undefined }} hooks
 *   what the console hears of an edit saved, and which sale it watches
 */
export function editForm(admin, hooks) {
  /** @type {any} the sale as the edit form loaded it (its version is what If-Match names) */
  let editing;
  /** An edit answered 503: recorded in D1, finished by sending it again. @type {string | undefined} */
  let unfinishedEdit;
  const rows = new VariantRows({
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
  function load(sale) {
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
    rows.clear();
    if (hasVariants(sale)) {
      for (const v of sale.variants) rows.add(v, { kept: true, priceFixed: started() });
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
      const changed = rows
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
      load(answer.body);
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
      load(answer.body.sale);
      say("edit-status", `Reloaded: version ${answer.body.sale.version}.`, "good");
    } else if (answer.status !== 401) {
      say("edit-status", `The sale cannot be read right now (${answer.message}).`, "bad");
    }
  });

  /** No sale in the edit form (until the watched one's first read loads it). */
  function forget() {
    editing = undefined;
    unfinishedEdit = undefined;
    rows.clear();
    $("edit-form").hidden = true;
    $("edit-none").hidden = false;
    say("edit-status", "");
  }

  return {
    load,
    sawSale,
    /** The watched sale changed, or the console locked: no sale in the form until the next read loads one. */
    forget,
  };
}
