// Scale with the work: sell-out time and server CPU as stock and crowd grow together (300
// units for 2k attempts, 3,000 for 20k, 30,000 for 100k, every attempt a distinct buyer),
// each crowd bounded in time. The CPU per attempt is read while the sale sells and after it
// sold out (refused in the isolate), and Redis' CPU per accepted checkout, so a cost that
// grew with the buyers hash would show as a rising column.
import type { Stack } from "../../dev/stack/local-stack.ts";
import { waitForDrain } from "../../dev/stack/local-stack.ts";
import { type CpuReading, type Processes, startCpuReading } from "../runner/cpu.ts";
import { drive, planCrowd } from "../runner/crowd.ts";
import { latencyFigures } from "../runner/stats.ts";
import { fixed, formatTable, seconds } from "../runner/table.ts";

const SCALE_STEPS = [
  { stock: 300, attempts: 2_000 },
  { stock: 3_000, attempts: 20_000 },
  { stock: 30_000, attempts: 100_000 },
] as const;

export interface ScaleRow {
  stock: number;
  attempts: number;
  /** Attempts sent before the time bound. */
  sent: number;
  accepted: number;
  sellOutMs: number | null;
  acceptedPerSec: number;
  p99Ms: number;
  /** workerd's CPU per attempt while units remained (settlement running meanwhile included), and after. */
  workerdMsPerAttemptSelling: number;
  workerdMsPerAttemptAfter: number | null;
  /** redis-server's CPU per accepted checkout: what a growing buyers hash would raise. */
  redisMsPerAccepted: number;
  buyersHash: number;
  interfered: boolean;
}

export async function benchScale(
  stack: Stack,
  opts: {
    processes: Processes;
    progress: (label: string) => void;
    inFlight?: number;
    boundMs?: number;
    steps?: readonly { stock: number; attempts: number }[];
  },
): Promise<{ inFlight: number; boundMs: number; rows: ScaleRow[] }> {
  const inFlight = opts.inFlight ?? 500;
  const boundMs = opts.boundMs ?? 60_000;
  const rows: ScaleRow[] = [];
  for (const { stock, attempts } of opts.steps ?? SCALE_STEPS) {
    opts.progress(`  stock ${stock}, ${attempts} distinct buyers, ${inFlight} in flight, at most ${boundMs / 1000} s`);
    const sale = await stack.api.createSale({ stock, name: `scale ${stock}` });
    const shots = await planCrowd(stack.api, attempts, 1, `scale-${stock}-${Date.now().toString(36)}-`);
    let accepted = 0;
    let answered = 0;
    let answeredAtSellOut = 0;
    let selling: CpuReading | undefined;
    let endSelling = startCpuReading(opts.processes);
    const { samples, durationMs } = await drive(
      shots,
      async (shot) => {
        const answer = await stack.api.checkout(sale.id, shot.token);
        answered++;
        if (answer.status === 202 && ++accepted === stock) {
          selling = endSelling();
          answeredAtSellOut = answered;
          endSelling = startCpuReading(opts.processes);
        }
        return answer;
      },
      { concurrency: inFlight, stopAfterMs: boundMs },
    );
    const last = endSelling();
    const sold = selling ?? last;
    const sellOutMs = selling ? selling.wallMs : null;
    const sellingAttempts = selling ? answeredAtSellOut : samples.length;
    rows.push({
      stock,
      attempts,
      sent: samples.length,
      accepted,
      sellOutMs,
      acceptedPerSec: (accepted * 1000) / (sellOutMs ?? durationMs),
      p99Ms: latencyFigures(samples.map((s) => s.latencyMs)).p99,
      workerdMsPerAttemptSelling: (sold.cpuMs.workerd ?? 0) / sellingAttempts,
      workerdMsPerAttemptAfter:
        selling && samples.length > answeredAtSellOut ? (last.cpuMs.workerd ?? 0) / (samples.length - answeredAtSellOut) : null,
      redisMsPerAccepted: (sold.cpuMs.redis ?? 0) / Math.max(1, accepted),
      buyersHash: (await waitForDrain(stack.api, sale.id, accepted, 120_000)).redis.buyers,
      interfered: sold.interfered || (selling !== undefined && last.interfered),
    });
  }
  return { inFlight, boundMs, rows };
}

export function printScale(f: { inFlight: number; boundMs: number; rows: ScaleRow[] }, log: (text: string) => void): void {
  log(
    `\n7. Scale: stock and crowd together, distinct buyers, ${f.inFlight} in flight, each crowd at most ${f.boundMs / 1000} s (settlement runs meanwhile)`,
  );
  log(
    formatTable(
      f.rows.map((r) => ({
        stock: r.stock,
        attempts: r.sent < r.attempts ? `${r.sent} of ${r.attempts}` : r.attempts,
        accepted: r.accepted,
        "sell-out s": seconds(r.sellOutMs),
        "accepted/s": fixed(r.acceptedPerSec, 0),
        "p99 ms": fixed(r.p99Ms),
        "workerd ms/attempt selling": fixed(r.workerdMsPerAttemptSelling, 3),
        "workerd ms/attempt after": r.workerdMsPerAttemptAfter === null ? "-" : fixed(r.workerdMsPerAttemptAfter, 3),
        "redis ms/accepted": fixed(r.redisMsPerAccepted, 3),
        "buyers hash": r.buyersHash,
        cores: r.interfered ? "INTERFERED" : "ok",
      })),
    ),
  );
}
