// @ts-check
// A sale's presale lanes in the console's create form, one row each: name, when it opens (the
// browser's time) and, optionally, the units it may sell. read() checks them as the API does
// (src/shared/requests.ts, lanesProblem), in words and naming the field to fix, so a form the
// API would refuse is never sent.
import { FormProblem } from "./lib/console-page.js";
import { FormRows, rowInput } from "./lib/form-rows.js";

/** The API's lane names (src/shared/limits.ts, LANE_NAME_PATTERN) and how many a sale may have (MAX_LANES). */
const LANE_NAME = /^[a-z0-9-]{1,32}$/;
const MAX_LANES = 10;
/** A lane opens at most this long before the public start (the longest sale, SALE_WINDOW). */
const LONGEST_MS = 30 * 86_400_000;

/** @typedef {{ name: string, startsAt: string, stock?: number }} LaneInput */

export class LaneRows extends FormRows {
  /** @param {{ body: HTMLElement, table: HTMLElement, add: HTMLButtonElement, changed?: () => void }} parts */
  constructor(parts) {
    super(parts, "Lane", ["name", "opens", "units"]);
  }

  /**
   * A new row, with a lane's values when given; returns its first field.
   * @param {{ name?: string, opens?: string, stock?: number | null }} [values] opens: a datetime-local value
   */
  add(values = {}) {
    const name = rowInput("laneName", { maxlength: "32", autocomplete: "off", spellcheck: "false" });
    name.value = values.name ?? "";
    const opens = rowInput("laneOpens", { type: "datetime-local", step: "1" });
    opens.value = values.opens ?? "";
    const stock = rowInput("laneStock", { type: "number", min: "1", max: "1000000", step: "1", placeholder: "no cap" });
    stock.value = values.stock ? String(values.stock) : "";
    this.append([name, opens, stock], true);
    return name;
  }

  /**
   * The rows as the API takes them, checked against the sale's start and, in a sale sold by
   * draw, its entries' close: each lane's winners are offered their orders from its start.
   * @param {number} startsAt the sale's public start (ms) @param {number | undefined} drawClosesAt when a draw's entries close (ms)
   * @returns {LaneInput[]}
   * @throws {FormProblem} naming the row and field to fix
   */
  read(startsAt, drawClosesAt) {
    const rows = this.fields();
    if (rows.length === 0) return [];
    if (rows.length > MAX_LANES)
      throw new FormProblem(`A sale has at most ${MAX_LANES} lanes: remove ${rows.length - MAX_LANES}.`, this.parts.add);
    const seen = new Set();
    let before = Number.NEGATIVE_INFINITY;
    return rows.map(([name, opens, stock], i) => {
      if (!name || !opens || !stock) throw new Error("a lane row lost a field");
      const which = `Lane ${i + 1}`;
      const value = name.value.trim();
      if (!LANE_NAME.test(value))
        throw new FormProblem(`${which}: the name is 1 to 32 of a-z, 0-9 and - (such as members).`, name);
      if (seen.has(value)) throw new FormProblem(`${which}: another lane is named ${value}; each needs its own name.`, name);
      seen.add(value);
      const at = Date.parse(opens.value);
      if (!Number.isFinite(at)) throw new FormProblem(`${which}: give the time it opens.`, opens);
      if (at <= before) throw new FormProblem(`${which}: lanes open one after another: this one after lane ${i}.`, opens);
      if (at >= startsAt) throw new FormProblem(`${which}: a lane opens before the sale's start, when everyone can buy.`, opens);
      if (drawClosesAt !== undefined && at < drawClosesAt)
        throw new FormProblem(
          `${which}: in a draw a lane opens at or after the entries close: its winners get their orders from its start.`,
          opens,
        );
      if (startsAt - at > LONGEST_MS) throw new FormProblem(`${which}: a lane opens at most 30 days before the start.`, opens);
      before = at;
      const units = Number(stock.value);
      if (stock.value.trim() !== "" && !(Number.isInteger(units) && units >= 1))
        throw new FormProblem(`${which}: the units are a whole number, at least 1, or empty for no cap.`, stock);
      return { name: value, startsAt: new Date(at).toISOString(), ...(stock.value.trim() !== "" && { stock: units }) };
    });
  }
}
