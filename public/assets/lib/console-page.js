// @ts-check
// What the console's sections share on the page: finding elements, saying an outcome in a
// status line, building table rows and the buttons inside them.
import { words } from "./format.js";

/** @param {string} id */
export const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** @param {string} id @param {string} text @param {"good" | "bad" | "wait" | ""} [tone] */
export function say(id, text, tone = "") {
  $(id).textContent = text;
  $(id).dataset.tone = tone;
}

/**
 * A table row; a cell's second part is its class (a series class gets a colour swatch).
 * @param {[string, string][]} cells
 * @param {number} [span]
 */
export function row(cells, span) {
  const tr = document.createElement("tr");
  for (const [text, kind] of cells) {
    const td = document.createElement("td");
    if (span) td.colSpan = span;
    if (kind.startsWith("series-")) {
      const swatch = document.createElement("span");
      swatch.className = `swatch ${kind}`;
      td.append(swatch);
    } else if (kind) {
      td.className = kind;
    }
    td.append(text);
    tr.append(td);
  }
  return tr;
}

/**
 * A button for one row of a table: it shows `label`, and a screen reader hears which row it
 * acts on (`label` followed by `which`), since every row has the same button.
 * @param {string} label @param {string} which @param {() => void} onClick
 */
export function rowButton(label, which, onClick) {
  const button = document.createElement("button");
  button.type = "button";
  button.append(label);
  const words = document.createElement("span");
  words.className = "visually-hidden";
  words.textContent = ` ${which}`;
  button.append(words);
  button.addEventListener("click", onClick);
  return button;
}

/** A table cell holding `parts` (text, buttons, badges). @param {...(Node | string)} parts */
export function cellOf(...parts) {
  const td = document.createElement("td");
  td.append(...parts);
  return td;
}

/** A state in words in a coloured badge (the stylesheet colours it by `data-state`). @param {string} state */
export function badge(state) {
  const span = document.createElement("span");
  span.className = "badge";
  span.dataset.state = state;
  span.textContent = words(state);
  return span;
}

/** What is wrong with a form as filled in, and the field to fix: nothing is sent. */
export class FormProblem extends Error {
  /** @param {string} message @param {HTMLElement} field */
  constructor(message, field) {
    super(message);
    this.field = field;
  }
}

/**
 * Says the problem in the form's status line and takes the keyboard to the field, marked
 * invalid until it is changed.
 * @param {string} statusId @param {FormProblem} problem
 */
export function showProblem(statusId, problem) {
  say(statusId, problem.message, "bad");
  const field = problem.field;
  field.setAttribute("aria-invalid", "true");
  field.addEventListener("input", () => field.removeAttribute("aria-invalid"), { once: true });
  field.focus();
}

/**
 * A definition list's items, name and value, as dt and dd elements (text only).
 * @param {[string, string][]} facts
 */
export const factItems = (facts) =>
  facts.flatMap(([name, value]) => {
    const dt = document.createElement("dt");
    dt.textContent = name;
    const dd = document.createElement("dd");
    dd.textContent = value;
    return [dt, dd];
  });

/**
 * Saves a file the console made or fetched (an export) as a download of the browser.
 * @param {Blob} file @param {string} filename
 */
export function saveFile(file, filename) {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(file);
  link.download = filename;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
}
