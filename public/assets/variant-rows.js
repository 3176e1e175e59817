// @ts-check
// A sale's variants (sizes, colours, tiers) in the console's forms, one row each: id, label,
// stock and price (in the currency's units; empty for the sale's own), rows added and removed
// with buttons. In the edit form a variant the sale has keeps its id and cannot be removed
// (the API adds and changes variants, never takes one away), its stock only grows, and its
// price is fixed once the sale has started.
import { FormProblem } from "./lib/console-page.js";
import { FormRows, rowInput } from "./lib/form-rows.js";
import { fromMinorUnits, toMinorUnits } from "./lib/money.js";

/** The API's variant ids: 1 to 32 letters, digits or . _ - */
const VARIANT_ID = /^[A-Za-z0-9._-]{1,32}$/;

/** @typedef {{ id: string, label: string, stock: number, price?: number }} VariantInput */

export class VariantRows extends FormRows {
  /**
   * @param {{ body: HTMLElement, table: HTMLElement, add: HTMLButtonElement, currency: () => string, changed?: () => void }} parts
   *   the table's body and its box (hidden while there are no rows), the add button, the
   *   currency prices are typed in, and who hears of every change
   */
  constructor(parts) {
    super(parts, "Variant", ["id", "label", "stock", "price"]);
    this.currency = parts.currency;
  }

  /**
   * A new row, with a variant's values when given; returns its first field.
   * @param {{ id?: string, label?: string, stock?: number, price?: number }} [values]
   * @param {{ kept?: boolean, priceFixed?: boolean }} [options] kept: a variant the sale has (edit)
   */
  add(values = {}, { kept = false, priceFixed = false } = {}) {
    const currency = this.currency();
    const id = rowInput("variantId", { maxlength: "32", autocomplete: "off" });
    id.value = values.id ?? "";
    id.readOnly = kept;
    const label = rowInput("variantLabel", { maxlength: "200", autocomplete: "off" });
    label.value = values.label ?? "";
    const stock = rowInput("variantStock", {
      type: "number",
      min: String(kept ? (values.stock ?? 1) : 1),
      max: "1000000",
      step: "1",
    });
    stock.value = values.stock === undefined ? "" : String(values.stock);
    const price = rowInput("variantPrice", { inputmode: "decimal", autocomplete: "off", placeholder: "the sale's" });
    price.value = values.price === undefined ? "" : fromMinorUnits(values.price, currency);
    price.disabled = priceFixed;
    const tr = this.append([id, label, stock, price], !kept);
    if (kept) tr.dataset.kept = values.id;
    return id;
  }

  /**
   * The rows as the API takes them, each checked (and a price read in the currency's units).
   * @returns {(VariantInput & { kept: boolean })[]}
   * @throws {FormProblem} naming the row and field to fix
   */
  read() {
    const currency = this.currency();
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
