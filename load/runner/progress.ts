// One updating status line on stderr while a crowd runs; silent when stderr is not a terminal.
import type { Progress } from "./crowd.ts";

export function progressLine(label: string, total: number): (p: Progress) => void {
  if (!process.stderr.isTTY) return () => {};
  const started = performance.now();
  return (p) => {
    const seconds = (performance.now() - started) / 1000;
    const rate = seconds > 0 ? Math.round(p.done / seconds) : 0;
    const line = `${label}: ${p.done}/${total} answered, ${p.sent - p.done} in flight, ${p.accepted} accepted, ${rate} req/s`;
    process.stderr.write(`\r\x1b[2K${line}${p.done === total ? "\n" : ""}`);
  };
}
