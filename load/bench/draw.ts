// npm run bench -- draw [--entries N]: the draw of N entries (a million by default) through
// the jobs queue, measured by load/runner/draw-scale.ts, printed as docs/benchmarks.md shows it.
import { API_ENTRIES, type DrawFigures, type EntryCost } from "../runner/draw-scale.ts";
import { fixed, formatTable, seconds } from "../runner/table.ts";

const count = (n: number) => n.toLocaleString("en-US");
const mib = (bytes: number) => `${fixed(bytes / 2 ** 20, 2)} MiB`;

export function printDraw(f: DrawFigures, log: (text: string) => void): void {
  log(`\n14. A draw of ${count(f.entries)} entries (two sizes, 1-2 units each), through the jobs queue`);
  const entryLine = (e: EntryCost) =>
    `${e.roundTrips} Upstash round trip(s), ${e.gatewayCommands} command(s) sent, ${e.redisCommands} Redis command(s) run`;
  log(`One entry through the API, warm: ${entryLine(f.entry.limitsOff)} with the global limits off (the entry's script alone)`);
  log(`                       as deployed: ${entryLine(f.entry.limitsOn)} with the global limits per user and address on`);
  log(
    `Loaded into Redis directly: ${count(f.entries - API_ENTRIES)} entries in ${seconds(f.load.ms)} s (${count(f.load.commands)} commands, ${f.buckets} bucket(s)); the largest record ${f.largestRecord.key}, ${mib(f.largestRecord.bytes)} (MEMORY USAGE), ${fixed((f.largestRecord.bytes / f.recordLimitBytes) * 100, 1)}% of REDIS_MAX_RECORD_BYTES (${count(f.recordLimitBytes)})`,
  );
  log(
    formatTable(
      f.phases.map((p) => ({
        phase: p.phase,
        s: seconds(p.ms),
        steps: count(p.steps),
        "D1 statements": count(p.d1Queries),
        "D1 rows read": count(p.d1RowsRead),
        "D1 rows written": count(p.d1RowsWritten),
        "D1 busy s": seconds(p.d1Ms),
        "workerd CPU s": seconds(p.workerdMs),
      })),
    ),
  );
  log(
    `Total ${seconds(f.totalMs)} s; ${count(f.steps)} steps in ${count(f.jobs)} jobs; Redis: ${count(f.redisCommands)} commands (INFO commandstats), ${count(f.gatewayRequests)} round trips and ${count(f.gatewayCommands)} commands at the gateway; D1: ${count(f.d1.queries)} statements, ${count(f.d1.rowsRead)} rows read, ${count(f.d1.rowsWritten)} rows written`,
  );
  log(
    `CPU during the run: workerd (the Worker, local D1 and Queues) ${seconds(f.cpu.workerdMs)} s, the gateway ${seconds(f.cpu.gatewayMs)} s, redis-server ${seconds(f.cpu.redisMs)} s; other work took ${fixed(f.cpu.othersShare * 100, 0)}% of the cores`,
  );
  if (f.stalls.length > 0)
    log(
      `The local jobs queue stalled ${f.stalls.length} time(s) (${f.stalls.map((s) => `${s.phase} ${seconds(s.lostMs)} s`).join(", ")}): the runtime restarted each time, D1 kept; that time is in the total`,
    );
  log(
    `verifyDraw: ${f.verify.ok ? "passes" : `FAILS (${f.verify.problems.slice(0, 3).join("; ")})`}: ${count(f.verify.entries)} leaves, ${count(f.verify.winners)} selected, ${seconds(f.verify.ms)} s, ${count(f.verify.d1RowsRead)} D1 rows read by the public routes; the bench's Node heap at most ${mib(f.heapPeakBytes)}`,
  );
}
