// A waiting-room drop with bots: people join, wait for their turn and buy with their pass;
// bots join too, but also hammer checkout without a pass, with passes copied from other
// accounts, and replay passes already used. The queue tests run it; so does `npm run load`'s
// queue scenario (and load/waiting-room.js is the same drop for k6 against a deployment).
import type { ApiClient } from "../../dev/lib/api-client.ts";
import type { QueuePosition } from "../../src/shared/api-types.ts";

export interface QueueCrowdOptions {
  people: number;
  bots: number;
  stock: number;
  /** Checkouts each bot tries. */
  botAttempts?: number;
  /** How often a waiting page polls at most (ms); it waits longer when retryAfterSec says so. */
  pollMs?: number;
  /** Gives up on a buyer who is still waiting after this long (ms). */
  patienceMs?: number;
  /** Places let in per second. */
  admitPerSec?: number;
  /** Joins sent at once. */
  joinWidth?: number;
}

export interface QueueCrowdResult {
  saleId: string;
  /** Person -> order id, for each 202. */
  accepted: Map<string, string>;
  /** Checkouts bots got accepted (must stay 0). */
  botAccepted: number;
  botRefusals: Map<string, number>;
  /** Answers that were failures (5xx, no answer), by code. */
  failures: Map<string, number>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);

/**
 * Runs the drop on a fifo sale created for it (passes valid a minute), everyone joining in the
 * pre-queue, the sale starting once all have joined.
 */
export async function runQueueCrowd(api: ApiClient, options: QueueCrowdOptions): Promise<QueueCrowdResult> {
  const { people, bots, stock, botAttempts = 15, pollMs = 300, patienceMs = 90_000, admitPerSec = 5, joinWidth = 200 } = options;
  const sale = await api.createSale({
    name: "queue crowd",
    stock,
    startsAt: new Date(Date.now() + 3_600_000).toISOString(),
    endsAt: new Date(Date.now() + 7_200_000).toISOString(),
    queue: { mode: "fifo", prequeueSec: 86_400, admitPerSec, passTtlSec: 60 },
  });
  const failures = new Map<string, number>();
  const join = async (userId: string) => {
    const token = await api.userToken(userId);
    const joined = await api.joinWaitingRoom(sale.id, token);
    if (!joined.body) throw new Error(`${userId} could not join: ${joined.status} ${joined.code}`);
    return { userId, token, ticket: joined.body.ticket };
  };
  type Joiner = Awaited<ReturnType<typeof join>>;
  const joinAll = async (names: string[]) => {
    const joined: Joiner[] = [];
    for (let i = 0; i < names.length; i += joinWidth)
      joined.push(...(await Promise.all(names.slice(i, i + joinWidth).map(join))));
    return joined;
  };
  // People first, then the bots: a bot's place is behind every person's, so a bot admitted and
  // never buying (its pass lapsing after a minute) cannot hold a unit a waiting person needs.
  const crowd = await joinAll(Array.from({ length: people }, (_, i) => `person-${sale.id}-${i}`));
  const botCrowd = await joinAll(Array.from({ length: bots }, (_, i) => `bot-${sale.id}-${i}`));
  const start = Date.now() + 1_000;
  const edit = await api.editSale(sale.id, { startsAt: new Date(start).toISOString() });
  if (edit.status !== 200) throw new Error(`the sale could not be started: ${edit.status} ${edit.code}`);

  const accepted = new Map<string, string>();
  const seenPasses: string[] = [];
  const usedPasses: string[] = [];

  const waitForTurn = async (buyer: Joiner): Promise<QueuePosition | undefined> => {
    const giveUp = Date.now() + patienceMs;
    while (Date.now() < giveUp) {
      const res = await api.pollQueue(sale.id, buyer.token, buyer.ticket);
      if (res.body && res.body.state !== "waiting") return res.body;
      if (res.status >= 500) bump(failures, res.code ?? `HTTP_${res.status}`);
      await sleep(Math.max(pollMs, Math.min(1_000, (res.body?.retryAfterSec ?? 0) * 1_000)));
    }
    return undefined;
  };
  const person = async (buyer: Joiner) => {
    const turn = await waitForTurn(buyer);
    if (turn?.state !== "admitted" || !turn.pass) return;
    seenPasses.push(turn.pass);
    const answer = await api.checkoutWithPass(sale.id, buyer.token, turn.pass);
    if (answer.status === 202) {
      accepted.set(buyer.userId, answer.orderId as string);
      usedPasses.push(turn.pass);
    } else if (answer.status === 0 || answer.status >= 500) bump(failures, answer.code);
  };
  const botRefusals = new Map<string, number>();
  let botAccepted = 0;
  const bot = async (buyer: Joiner) => {
    for (let i = 0; i < botAttempts; i++) {
      // No pass, then a copied one, then a used one replayed, in turn.
      const pool = i % 3 === 1 ? seenPasses : usedPasses;
      const pass = i % 3 === 0 ? undefined : pool[i % Math.max(1, pool.length)];
      const answer = await api.checkoutWithPass(sale.id, buyer.token, pass);
      if (answer.status === 202) botAccepted++;
      else bump(botRefusals, answer.code);
      await sleep(pollMs);
    }
  };
  await Promise.all([...crowd.map(person), ...botCrowd.map(bot)]);
  return { saleId: sale.id, accepted, botAccepted, botRefusals, failures };
}

/** The waiting room's own rules after a drop: what the passes record (place per holder) says. */
export function queueViolations(input: {
  accepted: Map<string, string>;
  botAccepted: number;
  /** The sale's passes: user id -> "<place>:<expiry ms>" or "<place>:used". */
  passes: Record<string, string>;
}): string[] {
  const violations: string[] = [];
  if (input.botAccepted > 0)
    violations.push(`${input.botAccepted} checkouts of bots without their own admitted pass were accepted`);
  const places = Object.values(input.passes)
    .map((record) => Number(record.split(":")[0]))
    .sort((a, b) => a - b);
  if (places.some((place, i) => place !== i + 1)) violations.push("the admitted places are not one run from place 1");
  for (const userId of input.accepted.keys()) {
    if (!input.passes[userId]?.endsWith(":used")) violations.push(`${userId} bought without using their own pass`);
  }
  return violations;
}

/** The people's accepted checkouts as the sale's invariants read samples (load/runner/invariants.ts). */
export const acceptedSamples = (accepted: Map<string, string>) =>
  [...accepted].map(([userId, orderId]) => ({ userId, orderId, status: 202, code: "ACCEPTED", startMs: 0, latencyMs: 0 }));
