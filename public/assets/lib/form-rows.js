// @ts-check
// Rows of fields in the console's forms (a sale's variants, its lanes): each row's fields and
// its Remove button, rows removed with the keyboard kept in the table, and every field named
// by its row's number ("Variant 2 stock") however rows come and go. A subclass says what a
// row holds (add) and how the rows read (read).
import { rowButton } from "./console-page.js";

/** A field of a row. @param {string} name @param {Record<string, string>} attributes */
export function rowInput(name, attributes) {
  const field = document.createElement("input");
  field.name = name;
  for (const [key, value] of Object.entries(attributes)) field.setAttribute(key, value);
  return field;
}

export class FormRows {
  /**
   * @param {{ body: HTMLElement, table: HTMLElement, add: HTMLButtonElement, changed?: () => void }} parts
   *   the table's body and its box (hidden while there are no rows), the add button, and who
   *   hears of every change
   * @param {string} noun what a row is, as its fields' names say it ("Variant")
   * @param {string[]} fieldNames each field's name after the row's ("id", "label", ...)
   */
  constructor(parts, noun, fieldNames) {
    this.parts = parts;
    this.noun = noun;
    this.fieldNames = fieldNames;
    parts.add.addEventListener("click", () => this.add().focus());
    parts.body.addEventListener("input", () => parts.changed?.());
  }

  /** A new empty row; returns its first field. Each subclass says what a row holds. @returns {HTMLElement} */
  add() {
    throw new Error("a subclass of FormRows says what a row holds");
  }

  /** @returns {HTMLTableRowElement[]} */
  rows() {
    return /** @type {HTMLTableRowElement[]} */ ([...this.parts.body.querySelectorAll("tr")]);
  }

  /**
   * Appends a row of `fields`, with a Remove button unless it may not be removed.
   * @param {HTMLElement[]} fields @param {boolean} removable @returns {HTMLTableRowElement}
   */
  append(fields, removable) {
    const tr = document.createElement("tr");
    for (const field of fields) {
      const td = document.createElement("td");
      td.append(field);
      tr.append(td);
    }
    const last = document.createElement("td");
    if (removable) last.append(rowButton("Remove", "", () => this.remove(tr)));
    tr.append(last);
    this.parts.body.append(tr);
    this.renumber();
    this.parts.changed?.();
    return tr;
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

  /** Each row's fields say which row they are in, however rows come and go. */
  renumber() {
    const rows = this.rows();
    this.parts.table.hidden = rows.length === 0;
    rows.forEach((tr, i) => {
      const which = `${this.noun} ${i + 1}`;
      [...tr.querySelectorAll("input")].forEach((field, f) => {
        field.setAttribute("aria-label", `${which} ${this.fieldNames[f]}`);
      });
      const hidden = tr.querySelector("button .visually-hidden");
      if (hidden) hidden.textContent = ` ${which.toLowerCase()}`;
    });
  }

  /** No rows. */
  clear() {
    this.parts.body.replaceChildren();
    this.renumber();
  }

  /** Each row's fields, in order. @returns {HTMLInputElement[][]} */
  fields() {
    return this.rows().map((tr) => /** @type {HTMLInputElement[]} */ ([...tr.querySelectorAll("input")]));
  }
}
