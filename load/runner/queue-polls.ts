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
      const joined = await api.joinQueue(sale.id, token);
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
