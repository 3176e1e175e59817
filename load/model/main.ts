// npm run model -- [--seed 1] [--json]
//
// A global spike on one sale, 10k / 100k / 1M attempts in one second, through three designs
// (see simulation.ts: atomic, the object one RPC per attempt, the object merged with a memo): accepted, answer times, time to sell out, the busiest second of each
// store against its published limit, and the bill per million attempts at list prices; and a
// waiting-room drop of a million buyers: Upstash commands per second in each phase, the polls' share;
// and the million-joiner rehearsal extrapolated to one database's limits (million.ts).
// Inputs and their sources: inputs.ts and docs/scale.md.
import { parseArgs } from "node:util";
import { UPSTASH_LIMITS } from "../cost/prices.ts";
import { fixed, formatTable, seconds } from "../runner/table.ts";
import { CEILING, checkoutCeiling } from "./ceiling.ts";
import { INPUTS, PRICES } from "./inputs.ts";
import { crowdAtLimits, largestLine, REHEARSED } from "./million.ts";
import { type Design, type Outcome, simulate, type Usage } from "./simulation.ts";
import { WAITING_ROOM, waitingRoomLoad } from "./waiting-room.ts";

const { values } = parseArgs({
  options: { seed: { type: "string", default: "1" }, json: { type: "boolean", default: false } },
});
const seed = Number(values.seed);
const SPIKES = [10_000, 100_000, 1_000_000];
const DESIGNS: Design[] = ["atomic", "durable-object", "durable-object-merged"];

/** Dollars per million attempts, by line of the bill. */
function bill(u: Usage, attempts: number) {
  const perMillion = 1_000_000 / attempts;
  const lines = {
    workersRequests: (u.workerRequests / 1e6) * PRICES.workersPerMillionRequests,
    workersCpu: (u.workerCpuMs / 1e6) * PRICES.workersPerMillionCpuMs,
    upstashCommands: (u.upstashCommands / 1e6) * PRICES.upstashPerMillionCommands,
    queueOperations: ((u.queueMessages * PRICES.queueOperationsPerMessage) / 1e6) * PRICES.queuesPerMillionOperations,
    d1RowsWritten: (u.d1RowsWritten / 1e6) * PRICES.d1PerMillionRowsWritten,
    objectRequests: (u.objectRequests / 1e6) * PRICES.objectsPerMillionRequests,
    objectDuration: (u.objectGbSeconds / 1e6) * PRICES.objectsPerMillionGbSeconds,
    objectRowsWritten: (u.objectRowsWritten / 1e6) * PRICES.objectsPerMillionRowsWritten,
  };
  const scaled = Object.fromEntries(Object.entries(lines).map(([k, v]) => [k, v * perMillion])) as typeof lines;
  return { ...scaled, total: Object.values(scaled).reduce((a, b) => a + b, 0) };
}

const outcomes: (Outcome & { bill: ReturnType<typeof bill> })[] = [];
for (const attempts of SPIKES) {
  for (const design of DESIGNS) {
    const outcome = simulate(design, attempts, seed);
    outcomes.push({ ...outcome, bill: bill(outcome.usage, attempts) });
  }
}

const waitingRoom = waitingRoomLoad();
/** Crowds the rehearsal is extrapolated to. */
const CROWDS = [1_000_000, 5_000_000, 14_000_000];
const atLimits = CROWDS.map((joiners) => crowdAtLimits(joiners));
const ceiling = checkoutCeiling(seed);

if (values.json) {
  console.log(
    JSON.stringify({
      seed,
      inputs: INPUTS,
      prices: PRICES,
      outcomes,
      waitingRoom: { inputs: WAITING_ROOM, phases: waitingRoom },
      million: { rehearsed: REHEARSED, atLimits, largestLine: largestLine() },
      ceiling: { bounds: CEILING, ...ceiling },
    }),
  );
} else {
  const pct = (n: number) => `${fixed(n * 100, n < 0.01 ? 2 : 1)}%`;
  console.log(`\nOne sale of ${INPUTS.stock} units, a spike of attempts within one second, seed ${seed}`);
  console.log(
    formatTable(
      outcomes.map((o) => ({
        attempts: o.attempts,
        design: o.design,
        accepted: o.accepted,
        "accepted rate": pct(o.accepted / o.attempts),
        "p50 ms": fixed(o.p50Ms, 0),
        "p99 ms": fixed(o.p99Ms, 0),
        "sold out s": seconds(o.sellOutMs),
        "last answer s": seconds(o.lastAnswerMs),
        "store's busiest second": `${Math.round(o.peakStoreRequestsPerSec)}/s of ${Math.round(o.storeLimitPerSec)}/s`,
        "Upstash commands, busiest second":
          o.design === "atomic" ? `${Math.round(o.peakCommandsPerSec)} of ${INPUTS.upstashCommandsPerSec}` : "-",
        "store calls": o.storeCalls,
        "buyers/call": fixed(o.storeDecided / Math.max(1, o.storeCalls), 1),
        "queue msgs/s": o.design === "atomic" ? `${Math.round(o.peakQueueMessagesPerSec)} of ${INPUTS.queueMessagesPerSec}` : "-",
        "D1 settled s": o.design === "atomic" ? seconds(o.d1SettleMs) : "-",
      })),
    ),
  );
  console.log("\nCost per million attempts at list prices (USD, beyond included usage)");
  console.log(
    formatTable(
      outcomes.map((o) => ({
        attempts: o.attempts,
        design: o.design,
        "Workers requests": fixed(o.bill.workersRequests, 3),
        "Workers CPU": fixed(o.bill.workersCpu, 3),
        "Upstash commands": fixed(o.bill.upstashCommands, 3),
        "Queue ops": fixed(o.bill.queueOperations, 3),
        "D1 rows": fixed(o.bill.d1RowsWritten, 3),
        "DO requests": fixed(o.bill.objectRequests, 3),
        "DO duration": fixed(o.bill.objectDuration, 4),
        "DO rows": fixed(o.bill.objectRowsWritten, 3),
        total: fixed(o.bill.total, 3),
      })),
    ),
  );
  console.log(
    `\nA waiting room: ${WAITING_ROOM.buyers.toLocaleString("en-US")} buyers join a random sale's ${WAITING_ROOM.prequeueSec} s pre-queue, ${WAITING_ROOM.admitPerSec} places let in per second, pages polling every ${WAITING_ROOM.meanPollSec} s on average`,
  );
  console.log(
    formatTable(
      waitingRoom.map((p) => ({
        phase: p.phase,
        "Worker requests/s": Math.round(p.workerRequestsPerSec),
        joins: Math.round(p.commandsPerSec.joins),
        "polls (progress reads)": Math.round(p.commandsPerSec.progress),
        "exact places": Math.round(p.commandsPerSec.placements),
        "passes and checkouts": Math.round(p.commandsPerSec.admitted),
        "Upstash commands/s": `${Math.round(p.total)} of ${p.limit}`,
      })),
    ),
  );
  console.log(
    `the polls: ${Math.round(waitingRoom[0]?.workerRequestsPerSec ?? 0).toLocaleString("en-US")} Worker requests/s cost ${Math.round(waitingRoom[0]?.commandsPerSec.progress ?? 0)} Upstash commands/s (one progress read per isolate per second)`,
  );
  const mb = (bytes: number) => `${fixed(bytes / 1_000_000, 0)} MB`;
  console.log(
    `\nA million joiners, rehearsed (npm run load -- --scenario million: ${REHEARSED.joiners.toLocaleString("en-US")} joiners, the largest record ${mb(REHEARSED.largestRecordBytes)}, Redis ${mb(REHEARSED.usedMemoryBytes)}), extrapolated: ${WAITING_ROOM.commandsPerJoin} Upstash commands a join as counted, joins bunching ${WAITING_ROOM.joinPeakFactor}x in the busiest second of a ${WAITING_ROOM.prequeueSec} s pre-queue, pages polling every ${WAITING_ROOM.meanPollSec} s`,
  );
  console.log(
    formatTable(
      atLimits.map((a) => ({
        joiners: a.joiners.toLocaleString("en-US"),
        "joining, busiest second": `${Math.round(a.joinCommandsPerSec).toLocaleString("en-US")} of ${INPUTS.upstashCommandsPerSec} commands/s`,
        "shortest pre-queue for one database": `${Math.ceil(a.shortestPrequeueSec / 60)} min`,
        "largest record": `${mb(a.largestRecordBytes)} of ${mb(UPSTASH_LIMITS.recordBytes)}`,
        "Redis memory": mb(a.memoryBytes),
        "polls/s": Math.round(a.pollsPerSec).toLocaleString("en-US"),
        "their Upstash commands/s": Math.round(a.pollCommandsPerSec),
      })),
    ),
  );
  console.log(
    `the longest line one database holds (its largest record at ${mb(UPSTASH_LIMITS.recordBytes)}): ${largestLine().toLocaleString("en-US")} joiners; beyond, a sale needs more buckets than a queued sale is split into (QUEUE_PLANNED_JOINERS); this machine's joins a second (${REHEARSED.redisJoinsPerSec.toLocaleString("en-US")} into Redis, ${REHEARSED.workerJoinsPerSec} through the local Worker) bound nothing on the platform`,
  );
  const c = ceiling;
  console.log(
    `\nThe checkout's own ceiling: the largest spike one Upstash database serves within ${INPUTS.upstashCommandsPerSec} commands/s (every command) with p99 <= ${CEILING.p99Ms} ms, to the nearest ${CEILING.stepAttempts.toLocaleString("en-US")} attempts`,
  );
  console.log(
    formatTable(
      [c.within, c.beyond].flatMap((o) =>
        o
          ? [
              {
                attempts: o.attempts,
                fits: o === c.within && c.attempts !== null ? "yes" : "no",
                "p50 ms": fixed(o.p50Ms, 0),
                "p99 ms": fixed(o.p99Ms, 0),
                "sold out s": seconds(o.sellOutMs),
                "Upstash commands, busiest second": Math.round(o.peakCommandsPerSec),
                "script calls": o.commandsByKind.scriptCalls,
                "settlement clears": o.commandsByKind.settlementClears,
                "refusal counters": o.commandsByKind.counters,
              },
            ]
          : [],
      ),
    ),
  );
  const p = c.perAccepted;
  console.log(
    `per accepted order at the ceiling: ${fixed(p.total, 2)} Upstash commands = ${fixed(p.scriptCalls, 2)} script calls + ${fixed(p.settlementClears, 2)} settlement clears + ${fixed(p.counters, 2)} refusal counters (lifecycle: none in the spike; one return.lua per order that expires or is cancelled, when its deadline passes)`,
  );
}
