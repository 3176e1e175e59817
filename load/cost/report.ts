// The counts per action and priced drops as tables: `npm run cost` prints one drop, `npm run
// bench` (its counts section) the drops the README shows.
import { fixed, formatTable } from "../runner/table.ts";
import type { ActionCost, Counts } from "./actions.ts";
import type { CountedActions } from "./counted.ts";
import { type Drop, MODES, type PricedDrop, priceDesignCard, priceDrop, STREAM_LASTS_SEC, type WaitingByPush } from "./drop.ts";
import { HOSTED_WAITING_ROOM, PRICES_READ_ON } from "./prices.ts";
import type { PushFigures } from "./push.ts";

const n = (x: number, digits = 2) => (Number.isInteger(x) ? x.toLocaleString("en-US") : fixed(x, digits));
export const usd = (x: number) =>
  x < 0.01 ? `$${x.toFixed(4)}` : `$${x.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
const mb = (bytes: number) => `${fixed(bytes / 1e6, 1)} MB`;

/** Every action's counts, and each shared one's share per isolate and second. */
export function actionTable(counted: CountedActions): string {
  const row = (a: ActionCost, c: Counts, per: string) => ({
    action: a.label,
    per,
    "Worker requests": n(c.workerRequests, 3),
    subrequests: n(c.subrequests, 3),
    "Upstash commands": n(c.upstashCommands, 3),
    "request bytes": n(c.upstashRequestBytes, 0),
    "queue messages": n(c.queueMessages, 3),
    "D1 rows read": n(c.d1RowsRead, 1),
    "D1 rows written": n(c.d1RowsWritten, 1),
  });
  return formatTable(
    counted.actions.flatMap((a) => [
      row(a, a.counts, a.per),
      ...(a.shared ? [row({ ...a, label: "  its share" }, a.shared, "isolate and second")] : []),
    ]),
  );
}

const billRow = (design: string, p: PricedDrop) => ({
  design,
  "Workers requests": usd(p.bill.workersRequests),
  "Workers CPU": usd(p.bill.workersCpu),
  Upstash: usd(p.bill.upstashCommands),
  Queues: usd(p.bill.queues),
  "D1 read": usd(p.bill.d1RowsRead),
  "D1 written": usd(p.bill.d1RowsWritten),
  total: usd(p.bill.total),
  "busiest second": `${n(Math.round(p.peak.commandsPerSec))} of ${n(p.peak.limit)} commands/s`,
  "largest record": `${mb(p.largestRecord.bytes)} of ${mb(p.largestRecord.limit)}`,
  "one Upstash database": p.fits ? "fits" : "does not fit",
});

/** One drop's bill beside the design card's and a hosted waiting room's price. */
export function dropReport(drop: Drop, ours: PricedDrop, card: PricedDrop): string {
  return [
    formatTable([billRow(`this project (${drop.mode})`, ours), billRow("the design card (no waiting room)", card)]),
    `a hosted waiting room: ${HOSTED_WAITING_ROOM}`,
    `Used: ${n(Math.round(ours.usage.workerRequests))} Worker requests, ${n(Math.round(ours.usage.upstashCommands))} Upstash commands (${mb(ours.usage.upstashBytes)}), ${n(Math.round(ours.usage.queueMessages))} queue messages, ${n(Math.round(ours.usage.d1RowsRead))} D1 rows read, ${n(Math.round(ours.usage.d1RowsWritten))} written`,
    `busiest second: ${ours.peak.when}; largest record: ${ours.largestRecord.what}, ${n(ours.largestRecord.entries)} entries at the split's bound per entry`,
  ].join("\n");
}

/** The drops the README shows: each mode at each crowd on `stock` units, with the design card's bill beside. */
export async function dropsTable(counted: CountedActions, crowds: readonly number[], stock: number): Promise<string> {
  const rows = [];
  for (const buyers of crowds) {
    const card = await priceDesignCard({ buyers, stock, mode: "open", minutes: 10 }, counted.actions);
    for (const mode of MODES) {
      const p = await priceDrop({ buyers, stock, mode, minutes: 10 }, counted.actions);
      rows.push({
        buyers: n(buyers),
        mode,
        "Worker requests": n(Math.round(p.usage.workerRequests)),
        "Upstash commands": n(Math.round(p.usage.upstashCommands)),
        Workers: usd(p.bill.workersRequests + p.bill.workersCpu),
        Upstash: usd(p.bill.upstashCommands),
        "Queues + D1": usd(p.bill.queues + p.bill.d1RowsRead + p.bill.d1RowsWritten),
        total: usd(p.bill.total),
        "busiest second": `${n(Math.round(p.peak.commandsPerSec))}/s`,
        "largest record": mb(p.largestRecord.bytes),
        "one database": p.fits ? "fits" : "no",
        "design card": `${usd(card.bill.total)} (${card.fits ? "fits" : "no"})`,
      });
    }
  }
  return [
    formatTable(rows),
    `${n(stock)} units, 10 minutes of waiting at the storefront's pace, prices read ${PRICES_READ_ON}; design card: the open drop as it is usually drawn; a hosted waiting room: ${HOSTED_WAITING_ROOM}`,
  ].join("\n");
}

/** Waiting in line by the lab's stream against polling, as measured here. */
export function pushMeasured(push: PushFigures): string {
  const row = (channel: string, f: PushFigures["polling"]) => ({
    channel,
    "answers the buyers got": f.answers,
    "Worker requests": f.counts.workerRequests,
    "Upstash commands": f.counts.upstashCommands,
    "workerd CPU ms per answer": fixed(f.workerdCpuMs / Math.max(1, f.answers), 3),
  });
  return [
    `${push.buyers} buyers waiting in a line letting one place in a second, ${push.seconds} s each way`,
    formatTable([
      row("polling (GET .../queue as told)", push.polling),
      row("the lab's stream (server-sent events)", push.stream),
    ]),
  ].join("\n");
}

/** The drop's waiting by push instead of polling, in words. */
export function pushLine(w: WaitingByPush): string {
  return `Waiting by push instead (one stream a buyer, reopened every ${STREAM_LASTS_SEC / 60} minutes, each poll an event on it, ${fixed(w.cpuRatio, 2)}x a poll's CPU per event as measured): ${n(Math.round(w.polls))} polls -> ${n(Math.round(w.connections))} requests, Workers ${usd(w.pollingUsd)} -> ${usd(w.pushUsd)}`;
}
