/** A plain-text table: a header row, a rule, and the rows, columns padded to fit. */
export function formatTable(rows: Record<string, string | number>[]): string {
  const first = rows[0];
  if (!first) return "";
  const headers = Object.keys(first);
  const cells = [headers, ...rows.map((row) => headers.map((h) => String(row[h] ?? "")))];
  const widths = headers.map((_, i) => Math.max(...cells.map((line) => (line[i] as string).length)));
  const render = (line: string[]) => line.map((cell, i) => cell.padStart(widths[i] as number)).join("  ");
  return [render(headers), widths.map((w) => "-".repeat(w)).join("  "), ...cells.slice(1).map(render)].join("\n");
}

/** Milliseconds as seconds with two decimals, or a dash for "did not happen". */
export const seconds = (ms: number | null) => (ms === null ? "-" : (ms / 1000).toFixed(2));
export const fixed = (n: number, digits = 1) => n.toFixed(digits);
