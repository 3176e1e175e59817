// The waiting room through the Worker (workerd, local D1 and Queues, a real redis-server
// behind the project's Upstash gateway): settings, joining and the pass rules checkout.lua
// enforces. The draw and a crowd with bots: test/node/waiting-room-crowd.test.ts.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { QueuePosition } from "../../src/shared/api-types";
import { bucketOf, buyerKeys, saleKeys } from "../../src/shared/keys";
import { api, createSale, eventually, type InLine, joinInOrder, redis, splitOf, userToken } from "./helpers";

const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();
const HOUR = 3_600_000;

/** The buyer's standing; undefined when the per-user limit asks them to wait. */
async function poll(saleId: string, buyer: InLine): Promise<QueuePosition | undefined> {
  const res = await api.pollQueue(saleId, buyer.token, buyer.ticket);
  if (res.status === 429) return undefined;
  if (!res.body) throw new Error(`poll: ${res.status} ${res.code}`);
  const placed = res.headers.get("Queue-Ticket");
  if (placed) buyer.ticket = placed;
  return res.body;
}

/** Polls, a few times a second as a page would (within the per-user limit), until the buyer is admitted or told no pass will come. */
async function waitForTurn(saleId: string, buyer: InLine): Promise<QueuePosition> {
  return eventually(
    `${buyer.userId}'s turn`,
    async () => {
      await new Promise((r) => setTimeout(r, 300));
      const p = await poll(saleId, buyer);
      // sold_out may be passing: a unit on its way back (a cancelled order's) is not back yet.
      return p !== undefined && (p.state === "admitted" || p.state === "closed") && p;
    },
    90_000,
  );
}

describe("a sale's waiting room settings", () => {
  it("are created, shown on the public sale with the seed's commitment, and edited only before joining opens", async () => {
    const sale = await createSale({
      startsAt: inMs(HOUR),
      endsAt: inMs(2 * HOUR),
      queue: { mode: "random", prequeueSec: 600, admitPerSec: 50, passTtlSec: 120 },
    });
    expect(sale.queue).toEqual({
      mode: "random",
      prequeueSec: 600,
      admitPerSec: 50,
      passTtlSec: 120,
      seedCommitment: expect.stringMatching(/^[0-9a-f]{64}$/),
      seed: null,
    });
    expect((await api.sale(sale.id)).queue).toEqual(sale.queue);
    expect(await redis.hmget(saleKeys(sale.id).meta, "qmode", "qrate", "qttl")).toEqual(["random", "50", "120"]);

    const edited = await api.editSale(sale.id, { queue: { admitPerSec: 80 } });
    expect(edited.body?.queue).toEqual({ ...sale.queue, admitPerSec: 80 }); // same seed, same commitment

    const open = await createSale({ startsAt: inMs(HOUR), endsAt: inMs(2 * HOUR), queue: { mode: "fifo", prequeueSec: 86_400 } });
    expect((await api.editSale(open.id, { queue: { mode: "random" } })).code).toBe("QUEUE_OPEN");
    expect((await api.editSale(open.id, { name: "renamed" })).status).toBe(200);

    const unqueued = await createSale();
    expect(unqueued.queue).toMatchObject({ mode: "off", seedCommitment: null, seed: null });
    const bad = await api.fetch("/admin/sales", {
      method: "POST",
      headers: {
        Authorization: `Bearer ${env.ADMIN_TOKEN}`,
        "Content-Type": "application/json",
      },
      body: JSON.stringify({ name: "x", stock: 1, startsAt: inMs(HOUR), endsAt: inMs(2 * HOUR), queue: { mode: "lottery" } }),
    });
    expect(bad.status).toBe(400);
  });
});

describe("joining", () => {
  it("is refused for a sale without a queue and before the pre-queue, and answers the same ticket again", async () => {
    const token = await userToken("joiner");
    const unqueued = await createSale();
    expect((await api.joinWaitingRoom(unqueued.id, token)).code).toBe("QUEUE_OFF");
    const later = await createSale({ startsAt: inMs(HOUR), endsAt: inMs(2 * HOUR), queue: { mode: "fifo", prequeueSec: 60 } });
    expect((await api.joinWaitingRoom(later.id, token)).code).toBe("QUEUE_NOT_OPEN");

    const sale = await createSale({ startsAt: inMs(HOUR), endsAt: inMs(2 * HOUR), queue: { mode: "fifo", prequeueSec: 7200 } });
    const first = await api.joinWaitingRoom(sale.id, token);
    expect(first.body).toEqual({ ticket: expect.any(String), place: 1, state: "waiting", retryAfterSec: expect.any(Number) });
    expect((await api.joinWaitingRoom(sale.id, token)).body).toEqual(first.body);
    const position = await api.pollQueue(sale.id, token, first.body?.ticket as string);
    expect(position.body).toMatchObject({ place: 1, admittedThrough: 0, aheadOfYou: 0, state: "waiting", pass: null });
    // Before the start the line has measured no pace: no estimate, rather than one from the ceiling.
    expect(position.body).toMatchObject({ estimatedWaitSec: null, likelySoldOutBeforeYou: false, notice: null });

    // Someone else's ticket, or a forged one, is refused.
    expect((await api.pollQueue(sale.id, await userToken("other"), first.body?.ticket as string)).code).toBe(
      "QUEUE_TICKET_INVALID",
    );
    expect((await api.pollQueue(sale.id, token, `${first.body?.ticket}x`)).code).toBe("QUEUE_TICKET_INVALID");
  });
});

describe("the console's places page", () => {
  it("lists the line in arrival order, whichever buckets hold its joiners", async () => {
    const sale = await createSale({ startsAt: inMs(HOUR), endsAt: inMs(2 * HOUR), queue: { mode: "fifo", prequeueSec: 7200 } });
    const userIds = Array.from({ length: 8 }, (_, i) => `page-${i}`);
    await joinInOrder(sale.id, userIds);
    const split = await splitOf(sale.id);
    expect(new Set(userIds.map((userId) => bucketOf(userId, split))).size).toBeGreaterThan(1);

    const page = await api.queuePlaces(sale.id);
    expect(page).toMatchObject({ drawn: 0, admittedThrough: 0, next: null });
    expect(page.places).toEqual(userIds.map((userId, i) => ({ place: i + 1, userId })));
    expect((await api.queuePlaces(sale.id, 6)).places).toEqual(userIds.slice(5).map((userId, i) => ({ place: i + 6, userId })));
  });
});

describe("the pass checkout.lua enforces", () => {
  it("no pass, another buyer's or another sale's is refused; one pass buys once; nothing is reserved on a refusal", async () => {
    const sale = await createSale({ stock: 5, perUserLimit: 2, queue: { mode: "fifo", admitPerSec: 1000 } });
    const other = await createSale({ stock: 5, queue: { mode: "fifo", admitPerSec: 1000 } });
    const [a, b] = await joinInOrder(sale.id, [`pass-a-${sale.id}`, `pass-b-${sale.id}`]);
    const [elsewhere] = await joinInOrder(other.id, [`pass-a-${sale.id}`]);
    if (!a || !b || !elsewhere) throw new Error("joins failed");
    const passA = (await waitForTurn(sale.id, a)).pass as string;
    const passB = (await waitForTurn(sale.id, b)).pass as string;
    const passElsewhere = (await waitForTurn(other.id, elsewhere)).pass as string;
    expect([passA, passB, passElsewhere].every((p) => p.startsWith("qp1."))).toBe(true);

    expect((await api.checkoutWithPass(sale.id, a.token, undefined)).code).toBe("QUEUE_PASS_REQUIRED");
    expect((await api.checkoutWithPass(sale.id, a.token, passB)).code).toBe("QUEUE_PASS_INVALID");
    expect((await api.checkoutWithPass(sale.id, a.token, passElsewhere)).code).toBe("QUEUE_PASS_INVALID");
    expect((await api.checkoutWithPass(sale.id, a.token, `${passA.slice(0, -2)}AA`)).code).toBe("QUEUE_PASS_INVALID");
    expect(await redis.hget(saleKeys(sale.id).meta, "remaining")).toBe("5");

    const bought = await api.checkoutWithPass(sale.id, a.token, passA);
    expect(bought.status).toBe(202);
    const replay = await api.checkoutWithPass(sale.id, a.token, passA);
    expect([replay.status, replay.code]).toEqual([409, "QUEUE_PASS_USED"]);
    expect(await redis.hget(saleKeys(sale.id).meta, "remaining")).toBe("4");
    expect((await poll(sale.id, a))?.state).toBe("closed"); // the pass bought: nothing more for this ticket
    const stats = await api.queueStats(sale.id);
    expect(stats).toMatchObject({ joined: 2, waiting: 0, admitted: 2, passesUsed: 1, passesExpired: 0, remaining: 4 });
  });

  it("a cancelled order's unit goes to the next place in line", async () => {
    const sale = await createSale({ stock: 1, paymentWindowSec: 600, queue: { mode: "fifo", admitPerSec: 1000 } });
    const [first, next] = await joinInOrder(sale.id, [`cancel-1-${sale.id}`, `cancel-2-${sale.id}`]);
    if (!first || !next) throw new Error("joins failed");
    const turn = await waitForTurn(sale.id, first);
    const bought = await api.checkoutWithPass(sale.id, first.token, turn.pass as string);
    expect(bought.status).toBe(202);
    // One unit, held by the first place: the second waits.
    expect((await poll(sale.id, next))?.state).not.toBe("admitted");
    await eventually(
      "the order to be cancelled",
      async () => (await api.cancel(bought.orderId as string, first.token)).status === 200,
    );
    const nextTurn = await waitForTurn(sale.id, next);
    expect(nextTurn).toMatchObject({ state: "admitted", place: 2 });
    expect((await api.checkoutWithPass(sale.id, next.token, nextTurn.pass as string)).status).toBe(202);
  });

  it("an expired pass is refused, and the next place is admitted", async () => {
    const sale = await createSale({ stock: 1, queue: { mode: "fifo", admitPerSec: 1000, passTtlSec: 30 } });
    const [late, next] = await joinInOrder(sale.id, [`expiry-1-${sale.id}`, `expiry-2-${sale.id}`]);
    if (!late || !next) throw new Error("joins failed");
    const turn = await waitForTurn(sale.id, late);
    expect(Date.parse(turn.passExpiresAt as string)).toBeGreaterThan(Date.now());
    expect((await poll(sale.id, next))?.state).toBe("waiting"); // one unit: nobody else while the pass lives
    // The pass's 30 s (the shortest a sale allows) end now: its expiry is moved to the past where
    // the scripts read it (the passes hash and the live set), as if the buyer had let it lapse.
    const keys = buyerKeys(sale.id, late.userId, await splitOf(sale.id));
    const lapsed = Date.now() - 1;
    await redis.hset(keys.passes, { [late.userId]: `${turn.place}:${lapsed}` });
    await redis.zadd(keys.live, { score: lapsed, member: late.userId });
    const nextTurn = await waitForTurn(sale.id, next); // comes once the first pass expires
    expect(nextTurn).toMatchObject({ state: "admitted", place: 2 });
    expect((await api.checkoutWithPass(sale.id, late.token, turn.pass as string)).code).toBe("QUEUE_PASS_EXPIRED");
    expect((await api.checkoutWithPass(sale.id, next.token, nextTurn.pass as string)).status).toBe(202);
    expect(await api.queueStats(sale.id)).toMatchObject({ admitted: 2, passesExpired: 1, passesUsed: 1, remaining: 0 });
  });
});
