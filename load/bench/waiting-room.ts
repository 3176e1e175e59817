// The waiting room's costs:
// 1. Upstash round trips per 1,000 position polls from one isolate (load/runner/waiting-room-polls.ts);
// 2. checkout throughput of a queued sale, every buyer holding their pass, against the same
//    sale unqueued, alternating rounds (the pass is checked and used inside checkout.lua), with
//    the ratio's spread over the rounds (this machine cannot tell a few per cent apart: no goal);
// 3. how long after a pass expires the next place is let in, seen by that buyer polling;
// 4. Redis commands per queue join on a sale split for 1,000 joiners and for 1,000,000
//    (load/runner/waiting-room-joins.ts): the join reads running totals, never every bucket.
import type { Stack } from "../../dev/stack/local-stack.ts";
import type { Processes } from "../runner/cpu.ts";
import { planCrowd, type Shot } from "../runner/crowd.ts";
import { alternatingRounds, type ContenderFigures, contenderTable, ratioSpread } from "../runner/rounds.ts";
import { fixed } from "../runner/table.ts";
import { type JoinCost, measureJoinCost, SMALL_RECORD_LIMIT_BYTES } from "../runner/waiting-room-joins.ts";
import { measurePollCost, type PollCost } from "../runner/waiting-room-polls.ts";

/** The shortest pass a sale may give (QUEUE_LIMITS.passTtlSec.min): the expiry figure waits it out. */
const PASS_TTL_SEC = 30;

export interface QueueFigures {
  polls: PollCost;
  inFlight: number;
  throughput: ContenderFigures[];
  /** Req/s of the queued sale over req/s of the unqueued one, and its lowest and highest over the rounds. */
  ratio: number;
  ratioSpread: { min: number; max: number };
  /** From the first place's pass expiring to the second place's poll answering admitted (ms). */
  expiryToNextAdmittedMs: number;
  /** Redis commands per join, on a sale split for 1,000 joiners and one for 1,000,000. */
  joins: JoinCost[];
}

/** Every shot's buyer joins and waits for its pass: a queued sale's checkouts that will all be accepted. */
async function passesFor(stack: Stack, saleId: string, shots: Shot[]): Promise<Map<string, string>> {
  const passes = new Map<string, string>();
  for (let i = 0; i < shots.length; i += 200) {
    await Promise.all(
      shots.slice(i, i + 200).map(async (shot) => {
        const joined = await stack.api.joinWaitingRoom(saleId, shot.token);
        if (!joined.body) throw new Error(`join: ${joined.status} ${joined.code}`);
        for (;;) {
          const { body } = await stack.api.pollQueue(saleId, shot.token, joined.body.ticket);
          if (body?.pass) return passes.set(shot.token, body.pass);
          if (body && body.state !== "waiting") throw new Error(`${shot.userId} was never admitted: ${body.state}`);
          await new Promise((r) => setTimeout(r, 200));
        }
      }),
    );
  }
  return passes;
}

async function expiryToNextAdmitted(stack: Stack, tag: string): Promise<number> {
  const { api } = stack;
  const sale = await api.createSale({ stock: 1, name: "queue: pass expiry", queue: { mode: "fifo", passTtlSec: PASS_TTL_SEC } });
  const [first, next] = (await planCrowd(api, 2, 1, `qexp-${tag}-`)) as [Shot, Shot];
  const tickets = [];
  for (const shot of [first, next]) tickets.push((await api.joinWaitingRoom(sale.id, shot.token)).body?.ticket as string);
  const firstTurn = (await api.pollQueue(sale.id, first.token, tickets[0] as string)).body;
  if (!firstTurn?.passExpiresAt) throw new Error("the first place was not let in");
  const expiresAt = Date.parse(firstTurn.passExpiresAt);
  for (;;) {
    const { body } = await api.pollQueue(sale.id, next.token, tickets[1] as string);
    if (body?.state === "admitted") return Date.now() - expiresAt;
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function benchQueue(
  stack: Stack,
  opts: { processes: Processes; inFlight?: number; perRound?: number; rounds?: number },
): Promise<QueueFigures> {
  const { api } = stack;
  const polls = await measurePollCost(stack);
  const inFlight = opts.inFlight ?? 50;
  const perRound = opts.perRound ?? 1_000;
  const rounds = opts.rounds ?? 3;
  const warmup = 200;
  const total = warmup + rounds * perRound;
  const tag = Date.now().toString(36);
  const plain = await api.createSale({ stock: total, name: "queue bench: no waiting room" });
  const queued = await api.createSale({
    stock: total,
    name: "queue bench: waiting room",
    queue: { mode: "fifo", admitPerSec: 100_000, passTtlSec: 3_600 },
  });
  const [plainBuyers, queuedBuyers] = await Promise.all([
    planCrowd(api, total, 1, `qb-plain-${tag}-`),
    planCrowd(api, total, 1, `qb-queued-${tag}-`),
  ]);
  const passes = await passesFor(stack, queued.id, queuedBuyers);
  const throughput = await alternatingRounds(
    [
      { name: "no waiting room", send: (s) => api.checkout(plain.id, s.token), expect: "ACCEPTED", shots: plainBuyers },
      {
        name: "waiting room, with passes",
        send: (s) => api.checkoutWithPass(queued.id, s.token, passes.get(s.token)),
        expect: "ACCEPTED",
        shots: queuedBuyers,
      },
    ],
    { rounds, perRound, warmup, inFlight, processes: opts.processes },
  );
  const [without, withQueue] = throughput as [ContenderFigures, ContenderFigures];
  return {
    polls,
    inFlight,
    throughput,
    ratio: withQueue.reqPerSec / without.reqPerSec,
    ratioSpread: ratioSpread(withQueue, without),
    expiryToNextAdmittedMs: await expiryToNextAdmitted(stack, tag),
    joins: await measureJoinCost([1_000, 1_000_000]),
  };
}

export function printQueue(f: QueueFigures, log: (text: string) => void): void {
  log("\n12. The waiting room");
  log(
    `position polls: ${fixed((f.polls.roundTrips * 1_000) / f.polls.polls, 1)} Upstash round trips per 1,000 polls from one isolate (${f.polls.polls} polls in ${fixed(f.polls.elapsedMs / 1_000, 1)} s)`,
  );
  log(contenderTable(f.throughput, "sale"));
  log(
    `with a waiting room, checkout runs at ${fixed(f.ratio, 2)}x the throughput without (${fixed(f.ratioSpread.min, 2)}-${fixed(f.ratioSpread.max, 2)}x round by round)`,
  );
  log(`a pass expiring to the next place let in (seen by its poll): ${fixed(f.expiryToNextAdmittedMs, 0)} ms`);
  for (const j of f.joins) {
    log(
      `Redis commands per queue join, a sale for ${j.joiners.toLocaleString("en")} joiners (${j.buckets} buckets at a ${SMALL_RECORD_LIMIT_BYTES / 1024} KiB record limit): fifo ${fixed(j.fifo, 1)}, random pre-queue ${fixed(j.preQueue, 1)}, placed after the start ${fixed(j.placedAfterStart, 1)}`,
    );
  }
}
