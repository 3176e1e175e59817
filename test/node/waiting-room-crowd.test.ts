// The waiting room under a crowd, on the Worker's bundle in workerd (Miniflare) with local D1
// and Queues and a real redis-server behind the project's Upstash gateway: a random sale's
// draw recomputed from its revealed seed, and a drop with bots.
import { Redis as IORedis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { mergedHash } from "../../dev/lib/sale-buckets.ts";
import { verifyQueue } from "../../dev/lib/verify-queue.ts";
import { eventually } from "../../dev/lib/wait.ts";
import { type Stack, startStack } from "../../dev/stack/local-stack.ts";
import { saleViolations } from "../../load/runner/invariants.ts";
import { acceptedSamples, queueViolations, runQueueCrowd } from "../../load/runner/waiting-room-crowd.ts";
import { drawOrder, seedCommitment } from "../../src/shared/waiting-room-draw.ts";

let stack: Stack;
let redis: IORedis;

beforeAll(async () => {
  // The crowd comes from one client: no per-user limit here.
  stack = await startStack({ vars: { USER_RATE_LIMIT: "0" } });
  redis = new IORedis(stack.redis.url);
});
afterAll(async () => {
  redis?.disconnect();
  await stack?.stop();
});

async function inBatches<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += width) out.push(...(await Promise.all(items.slice(i, i + width).map(work))));
  return out;
}

it("places 2,000 pre-queue joiners of a random sale by its committed seed: anyone can recompute it, and it is not the join order", async () => {
  const { api } = stack;
  const sale = await api.createSale({
    stock: 10,
    startsAt: new Date(Date.now() + 3_600_000).toISOString(),
    endsAt: new Date(Date.now() + 7_200_000).toISOString(),
    queue: { mode: "random", prequeueSec: 86_400, admitPerSec: 100_000 },
  });
  expect(sale.queue.seedCommitment).toMatch(/^[0-9a-f]{64}$/);
  const userIds = Array.from({ length: 2_000 }, (_, i) => `draw-${sale.id}-${i}`);
  const tokens = await Promise.all(userIds.map((u) => api.userToken(u)));
  // In join order, 50 at a time (which of a batch of 50 lands first is the machine's choice;
  // a draw by join order would still show as a rank correlation near 1 below).
  const prequeued = await inBatches(tokens, 50, async (token) => (await api.joinWaitingRoom(sale.id, token)).body?.place);
  expect(prequeued.filter((place) => place !== null)).toEqual([]);

  // The sale starts in a moment and ends a little later (the window may move until the start).
  const startsAt = Date.now() + 1_500;
  const window = { startsAt: new Date(startsAt).toISOString(), endsAt: new Date(startsAt + 3_000).toISOString() };
  expect((await api.editSale(sale.id, window)).status).toBe(200);
  await eventually("the start", async () => Date.now() > startsAt + 100);
  // Joining again answers the place the draw gave.
  const places = await inBatches(tokens, 50, async (token) => (await api.joinWaitingRoom(sale.id, token)).body?.place);
  expect(new Set(places).size).toBe(2_000);

  const ended = await eventually("the sale's end, and its seed", async () => {
    const view = await api.sale(sale.id);
    return view.queue.seed !== null && view;
  });
  const seed = ended.queue.seed as string;
  expect(await seedCommitment(seed)).toBe(sale.queue.seedCommitment);
  const recomputed = await drawOrder(seed, userIds);
  expect(recomputed.map((u) => places[userIds.indexOf(u)])).toEqual(userIds.map((_, i) => i + 1));

  // Spearman's rank correlation of join order and place: near 0 (its spread for 2,000 is about 0.02).
  const n = userIds.length;
  const d2 = places.reduce((sum: number, place, i) => sum + ((place as number) - (i + 1)) ** 2, 0);
  const rho = 1 - (6 * d2) / (n * (n * n - 1));
  expect(Math.abs(rho)).toBeLessThan(0.1);

  // npm run verify-queue's check agrees, from the public routes alone (no token), once the
  // pre-queue is published; and a buyer finds there the place they were given from their user
  // id, while a place given otherwise (one changed by one) does not check out.
  const publicFetch: typeof fetch = (input, init) => {
    if (new Headers(init?.headers).has("Authorization")) throw new Error("the verifier sent a token");
    const url = new URL(String(input));
    return stack.worker.fetch(`${url.pathname}${url.search}`);
  };
  await eventually("the pre-queue's publication", async () => (await api.queueDraw(sale.id)).body?.state === "ready");
  const someone = userIds[1_234] as string;
  const given = places[1_234] as number;
  const verdict = await verifyQueue("http://127.0.0.1", sale.id, { userId: someone, place: given }, publicFetch);
  expect(verdict.problems).toEqual([]);
  expect(verdict).toMatchObject({ ok: true, places: 2_000, user: { place: given } });
  const otherPlace = given === 1 ? 2 : given - 1;
  const changed = await verifyQueue("http://127.0.0.1", sale.id, { userId: someone, place: otherPlace }, publicFetch);
  expect(changed.ok).toBe(false);
  expect(changed.problems).toEqual([
    `user ${someone} was given place ${otherPlace}, but the published draw puts their draw key at place ${given}`,
  ]);
});

it("a drop with bots: units only to their own pass holders, admitted places one run from the front, every order settled once", async () => {
  const stock = 20;
  const result = await runQueueCrowd(stack.api, { people: 60, bots: 15, stock });
  expect(result.failures).toEqual(new Map());
  expect(result.accepted.size).toBe(stock);
  expect([...result.botRefusals.keys()]).toEqual(expect.arrayContaining(["QUEUE_PASS_REQUIRED", "QUEUE_PASS_INVALID"]));

  const passes = await mergedHash(redis, result.saleId, "passes");
  expect(queueViolations({ accepted: result.accepted, botAccepted: result.botAccepted, passes })).toEqual([]);
  const report = await stack.drain(result.saleId, stock);
  const settled = await stack.settledOrders(result.saleId);
  const samples = acceptedSamples(result.accepted);
  expect(saleViolations({ stock, samples, report, settled })).toEqual([]);
  expect(await stack.api.queueStats(result.saleId)).toMatchObject({ admitted: stock, passesUsed: stock, remaining: 0 });
});
