// CSV that stays data in every spreadsheet. A spreadsheet runs a cell that starts with a
// formula character, and which characters end a cell depends on its locale: `,` in English,
// `;` in German, French, Dutch, Spanish or Italian Excel, and some importers split on either
// whatever the quotes say. So, as OWASP's CSV injection guidance asks, a formula character at
// the start of a cell or after any `,` or `;` inside it (spaces between do not hide it) is
// neutralised with a quote mark before it (tabs and line breaks count as separators: an
// importer may split cells at tabs, a naive reader rows at line breaks), and such a cell is quoted: read with either
// separator, quoted or split naively, no piece of it starts a formula. Written by hand: the
// CSV writers of npm quote by the separator they are given, and none neutralises formulas
// after a separator inside a cell.

/**
 * Where a piece starts (the cell's start, or after `,` `;` a tab or a line break, spaces skipped) with
 * a formula character: `=` `+` `-` `@`, tab or carriage return (OWASP's list).
 */
const FORMULA_AT_A_START = /(?<=(?:^|[,;\t\r\n]) *)(?=[=+\-@\t\r])/g;
/** What makes a cell need quotes: either separator, a quote, a tab, a line break. */
const NEEDS_QUOTES = /[",;\t\r\n]/;

/** One cell of a row: empty for null, and never a formula in a `,` or `;` locale. */
export function csvCell(value: string | number | boolean | null): string {
  if (value === null) return "";
  const text = String(value);
  const neutralised = text.replace(FORMULA_AT_A_START, "'");
  return neutralised !== text || NEEDS_QUOTES.test(neutralised) ? `"${neutralised.replaceAll('"', '""')}"` : neutralised;
}

/** One row, CRLF-terminated (RFC 4180). */
export const csvRow = (cells: readonly (string | number | boolean | null)[]): string => `${cells.map(csvCell).join(",")}\r\n`;
