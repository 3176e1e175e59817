// @ts-check
// A sale's variants (sizes, colours, tiers) in the console's forms, one row each: id, label,
// stock and price (in the currency's units; empty for the sale's own), rows added and removed
// with buttons. In the edit form a variant the sale has keeps its id and cannot be removed
// (the API adds and changes variants, never takes one away), its stock only grows, and its
// price is fixed once the sale has started.
import { FormProblem, rowButton } from "./lib/console-page.js";
import { fromMinorUnits, toMinorUnits } from "./lib/money.js";

/** The API's variant ids: 1 to 32 letters, digits or . _ - */
const VARIANT_ID = /^[A-Za-z0-9._-]{1,32}$/;

/** @typedef {{ id: string, label: string, stock: number, price?: number }} VariantInput */

/** @param {string} name @param {Record<string, string>} attributes */
function input(name, attributes) {
  const field = document.createElement("input");
  field.name = name;
  for (const [key, value] of Object.entries(attributes)) field.setAttribute(key, value);
  return field;
}

export class VariantRows {
  /**
   * @param {{ body: HTMLElement, table: HTMLElement, add: HTMLButtonElement, currency: () => string, changed?: () => void }} parts
   *   the table's body and its box (hidden while there are no rows), the add button, the
   *   currency prices are typed in, and who hears of every change
   */
  constructor(parts) {
    this.parts = parts;
    parts.add.addEventListener("click", () => this.add().focus());
    parts.body.addEventListener("input", () => parts.changed?.());
  }

  /** @returns {HTMLTableRowElement[]} */
  rows() {
    return /** @type {HTMLTableRowElement[]} */ ([...this.parts.body.querySelectorAll("tr")]);
  }

  /**
   * A new row, with a variant's values when given; returns its first field.
   * @param {{ id?: string, label?: string, stock?: number, price?: number }} [values]
   * @param {{ kept?: boolean, priceFixed?: boolean }} [options] kept: a variant the sale has (edit)
   */
  add(values = {}, { kept = false, priceFixed = false } = {}) {
    const currency = this.parts.currency();
    const id = input("variantId", { maxlength: "32", autocomplete: "off" });
    id.value = values.id ?? "";
    id.readOnly = kept;
    const label = input("variantLabel", { maxlength: "200", autocomplete: "off" });
    label.value = values.label ?? "";
    const stock = input("variantStock", {
      type: "number",
      min: String(kept ? (values.stock ?? 1) : 1),
      max: "1000000",
      step: "1",
    });
    stock.value = values.stock === undefined ? "" : String(values.stock);
    const price = input("variantPrice", { inputmode: "decimal", autocomplete: "off", placeholder: "the sale's" });
    price.value = values.price === undefined ? "" : fromMinorUnits(values.price, currency);
    price.disabled = priceFixed;
    const tr = document.createElement("tr");
    if (kept) tr.dataset.kept = values.id;
    for (const field of [id, label, stock, price]) {
      const td = document.createElement("td");
      td.append(field);
      tr.append(td);
    }
    const last = document.createElement("td");
    if (!kept) last.append(rowButton("Remove", "", () => this.remove(tr)));
    tr.append(last);
    this.parts.body.append(tr);
    this.renumber();
    this.parts.changed?.();
    return id;
  }

  /** @param {HTMLTableRowElement} tr */
  remove(tr) {
    const next = /** @type {HTMLTableRowElement | null} */ (tr.nextElementSibling ?? tr.previousElementSibling);
    tr.remove();
    this.renumber();
    this.parts.changed?.();
    // The keyboard stays in the table (on the row that took its place), else goes back to Add.
    (next?.querySelector("button") ?? this.parts.add).focus();
  }

  /** Each row's fields say which row they are in ("Variant 2 stock"), however rows come and go. */
  renumber() {
    const rows = this.rows();
    this.parts.table.hidden = rows.length === 0;
    rows.forEach((tr, i) => {
      const [id, label, stock, price] = /** @type {HTMLInputElement[]} */ ([...tr.querySelectorAll("input")]);
      const which = `Variant ${i + 1}`;
      id?.setAttribute("aria-label", `${which} id`);
      label?.setAttribute("aria-label", `${which} label`);
      stock?.setAttribute("aria-label", `${which} stock`);
      price?.setAttribute("aria-label", `${which} price`);
      const hidden = tr.querySelector("button .visually-hidden");
      if (hidden) hidden.textContent = ` variant ${i + 1}`;
    });
  }

  /** No rows. */
  clear() {
    this.parts.body.replaceChildren();
    this.renumber();
  }

  /**
   * The rows as the API takes them, each checked (and a price read in the currency's units).
   * @returns {(VariantInput & { kept: boolean })[]}
   * @throws {FormProblem} naming the row and field to fix
   */
  read() {
    const currency = this.parts.currency();
    const seen = new Set();
    return this.rows().map((tr, i) => {
      const [id, label, stock, price] = /** @type {HTMLInputElement[]} */ ([...tr.querySelectorAll("input")]);
      const which = `Variant ${i + 1}`;
      if (!id || !label || !stock || !price) throw new Error("a variant row lost a field");
      const value = id.value.trim();
      if (!VARIANT_ID.test(value)) throw new FormProblem(`${which}: the id is 1 to 32 letters, digits or . _ -`, id);
      if (seen.has(value)) throw new FormProblem(`${which}: another variant has the id ${value}; each needs its own.`, id);
      seen.add(value);
      if (label.value.trim() === "") throw new FormProblem(`${which}: give it a label, what buyers see (such as EU 42).`, label);
      const units = Number(stock.value);
      if (stock.value.trim() === "" || !Number.isInteger(units) || units < 1) {
        throw new FormProblem(`${which}: the stock is a whole number, at least 1.`, stock);
      }
      let minor;
      try {
        // A price fixed since the start is not sent: the variant keeps it.
        minor = price.disabled ? undefined : toMinorUnits(price.value, currency);
      } catch (err) {
        throw new FormProblem(`${which}: not a price: ${/** @type {Error} */ (err).message}.`, price);
      }
      return {
        id: value,
        label: label.value.trim(),
        stock: units,
        ...(minor !== undefined && { price: minor }),
        kept: tr.dataset.kept !== undefined,
      };
    });
  }

  /** The stocks typed so far, added up (rows not filled in count nothing). */
  stockSum() {
    return this.rows().reduce((sum, tr) => {
      const units = Number(/** @type {HTMLInputElement | null} */ (tr.querySelector('input[name="variantStock"]'))?.value);
      return sum + (Number.isInteger(units) && units > 0 ? units : 0);
    }, 0);
  }
}
