// What polling a sale's waiting room costs: round trips to Upstash (counted at the gateway)
// for a burst of position polls from one isolate. The queue test asserts the figure;
// `npm run bench` prints it.
import type { Stack } from "../../dev/stack/local-stack.ts";

export interface PollCost {
  polls: number;
  /** Gateway requests (Upstash round trips) the burst cost. */
  roundTrips: number;
  /** How long the burst took: the line's progress is read at most once a second per isolate. */
  elapsedMs: number;
}

/**
 * `buyers` join a fifo sale's pre-queue, then `polls` polls spread over their tickets go out
 * `width` at a time. None is admitted (the sale starts in an hour), so no poll has a pass to read.
 */
export async function measurePollCost(stack: Stack, { buyers = 50, polls = 1_000, width = 100 } = {}): Promise<PollCost> {
  const { api } = stack;
  const sale = await api.createSale({
    name: "queue polls",
    startsAt: new Date(Date.now() + 3_600_000).toISOString(),
    endsAt: new Date(Date.now() + 7_200_000).toISOString(),
    queue: { mode: "fifo", prequeueSec: 86_400, admitPerSec: 100 },
  });
  const tickets = await Promise.all(
    Array.from({ length: buyers }, async (_, i) => {
      const token = await api.userToken(`poller-${sale.id}-${i}`);
      const joined = await api.joinWaitingRoom(sale.id, token);
      if (!joined.body) throw new Error(`join: ${joined.status} ${joined.code}`);
      return { token, ticket: joined.body.ticket };
    }),
  );
  // The create's second eviction lands about 2 s after it: let it pass before counting.
  await new Promise((r) => setTimeout(r, 2_500));
  await stack.gateway.resetStats();
  const started = performance.now();
  for (let sent = 0; sent < polls; sent += width) {
    await Promise.all(
      Array.from({ length: Math.min(width, polls - sent) }, async (_, i) => {
        const { token, ticket } = tickets[(sent + i) % tickets.length] as (typeof tickets)[number];
        const res = await api.pollQueue(sale.id, token, ticket);
        if (res.status !== 200) throw new Error(`poll: ${res.status} ${res.code}`);
      }),
    );
  }
  const elapsedMs = performance.now() - started;
  return { polls, roundTrips: (await stack.gateway.stats()).requests, elapsedMs };
}

/**
 * `attempts` checkouts without a Queue-Pass on a live queued sale, `width` at a time, after one
 * that teaches the isolate the sale has a waiting room: they are refused in the isolate, so
 * Redis sees about two calls a second (the memo learning it again after its second, and the
 * console's counters of local refusals), not one per attempt.
 */
export async function measurePasslessCost(stack: Stack, { attempts = 500, width = 50 } = {}): Promise<PollCost> {
  const { api } = stack;
  const sale = await api.createSale({ name: "queue bots", queue: { mode: "fifo" } });
  const tokens = await Promise.all(Array.from({ length: width }, (_, i) => api.userToken(`bot-${sale.id}-${i}`)));
  const first = await api.checkoutWithPass(sale.id, tokens[0] as string, undefined);
  if (first.code !== "QUEUE_PASS_REQUIRED") throw new Error(`a checkout without a pass answered ${first.code}`);
  await new Promise((r) => setTimeout(r, 2_500)); // the create's second eviction
  await stack.gateway.resetStats();
  const started = performance.now();
  for (let sent = 0; sent < attempts; sent += width) {
    await Promise.all(
      tokens.slice(0, Math.min(width, attempts - sent)).map(async (token) => {
        const answer = await api.checkoutWithPass(sale.id, token, undefined);
        if (answer.code !== "QUEUE_PASS_REQUIRED") throw new Error(`a checkout without a pass answered ${answer.code}`);
      }),
    );
  }
  const elapsedMs = performance.now() - started;
  // The last second's counters are written a second after it.
  await new Promise((r) => setTimeout(r, 1_500));
  return { polls: attempts, roundTrips: (await stack.gateway.stats()).requests, elapsedMs };
}
