// A random waiting room's pre-queue published once the sale is over (workerd, local D1 and
// the jobs queue, a real redis-server behind the project's gateway): the public pages and root
// against the line the admin route shows, `verify-queue` passing from public routes alone (no
// token) and failing on a changed leaf, a reordered page, a page tampered with in D1 and an
// admitted place changed, a publication cut short at every other step giving the same pages and
// root, one whose pre-queue changed under it starting again, and a presale lane's own line
// published apart under its own seed.
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { verifyQueue } from "../../dev/lib/verify-queue";
import { findQueueDrawRuns } from "../../src/admission/queue-draw-records";
import { queueDrawStep, superviseQueueDraws } from "../../src/admission/queue-draw-run";
import { redisFor } from "../../src/redis/client";
import { findSale } from "../../src/sales/repository";
import type { Sale } from "../../src/sales/sale";
import type { QueueDrawPlacesPage } from "../../src/shared/api-types";
import { merkleRoot } from "../../src/shared/draw-proof";
import { bucketKeys, prePartitionOf } from "../../src/shared/keys";
import { placeLeafHash } from "../../src/shared/queue-draw-proof";
import { drawKey, lineSeed, seedCommitment } from "../../src/shared/waiting-room-draw";
import { everyOtherBatchFails } from "./held-db";
import { api, BASE, eventually, redis, userToken } from "./helpers";

const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();
const HOUR = 3_600_000;

/** The Worker as anyone reaches it: no token of any kind on any request. */
const publicFetch: typeof fetch = (input, init) => {
  if (new Headers(init?.headers).has("Authorization")) throw new Error("the verifier sent a token");
  return SELF.fetch(input, init);
};

/** The public routes with every page of places changed by `change`. */
const tampered =
  (change: (page: QueueDrawPlacesPage) => void): typeof fetch =>
  async (input, init) => {
    const res = await publicFetch(input, init);
    if (!String(input).includes("/queue/draw/places")) return res;
    const page = (await res.json()) as QueueDrawPlacesPage;
    change(page);
    return Response.json(page);
  };

/** A random sale an hour away whose pre-queue `n` buyers join now. */
async function joinedSale(n: number, prefix: string): Promise<{ sale: Sale; userIds: string[] }> {
  const created = await api.createSale({
    stock: 5,
    startsAt: inMs(HOUR),
    endsAt: inMs(2 * HOUR),
    queue: { mode: "random", prequeueSec: 7_200, admitPerSec: 1_000 },
  });
  const userIds = Array.from({ length: n }, (_, i) => `${prefix}-${created.id}-${i}`);
  const joins = await Promise.all(userIds.map(async (u) => (await api.joinWaitingRoom(created.id, await userToken(u))).body));
  expect(joins.every((j) => j?.place === null)).toBe(true);
  return { sale: (await findSale(env.DB, created.id)) as Sale, userIds };
}

/** The publication's run of the sale's public line. */
const publicRun = async (saleId: string) => (await findQueueDrawRuns(env.DB, saleId)).find((r) => r.line === "");

/** Every published place of a line (the public one without `lane`), page after page. */
async function publishedPlaces(saleId: string, lane?: string): Promise<{ place: number; drawKey: string }[]> {
  const places = [];
  for (let cursor: string | undefined = "0"; cursor !== undefined; ) {
    const page = await api.queueDrawPlaces(saleId, cursor, lane);
    if (!page.body) throw new Error(`places page ${cursor}: ${page.status} ${page.code}`);
    places.push(...page.body.places);
    cursor = page.body.next ?? undefined;
  }
  return places;
}

describe("a random sale's published pre-queue", () => {
  it("is published once the sale ends: the line's draw keys in place order, its root, and verify-queue agrees without a token", async () => {
    const { sale, userIds } = await joinedSale(40, "published");
    const before = await api.queueDraw(sale.id);
    expect(before.body).toEqual({
      saleId: sale.id,
      state: "pending",
      seedCommitment: sale.queue.seedCommitment,
      seed: null,
      drawn: null,
      placesRoot: null,
      publishedAt: null,
    });
    expect((await api.queueDrawPlaces(sale.id)).code).toBe("QUEUE_DRAW_PENDING");
    expect((await verifyQueue(BASE, sale.id, {}, publicFetch)).problems).toEqual([
      "nothing to verify yet: the seed is secret until the sale ends (or is cancelled)",
    ]);
    const fifo = await api.createSale({ queue: { mode: "fifo" } });
    expect((await api.queueDraw(fifo.id)).code).toBe("QUEUE_NOT_RANDOM");

    // The sale starts in a moment and ends a little later; the cron then sends its pre-queue to be published.
    const startsAt = Date.now() + 1_500;
    expect((await api.editSale(sale.id, { startsAt: inMs(1_500), endsAt: inMs(3_000) })).status).toBe(200);
    await eventually("the sale's end", async () => Date.now() > startsAt + 1_600);
    expect(await superviseQueueDraws(env.DB, env.JOBS)).toContain(sale.id);
    const published = await eventually("the publication", async () => {
      const view = (await api.queueDraw(sale.id)).body;
      return view?.state === "ready" && view;
    });
    expect(await superviseQueueDraws(env.DB, env.JOBS)).not.toContain(sale.id);
    const seed = published.seed as string;
    expect(published).toMatchObject({ drawn: 40, seedCommitment: await seedCommitment(seed) });

    // The published list is the line the sale holds: each place's holder's draw key, in draw-key order.
    const places = await publishedPlaces(sale.id);
    const line = await api.queuePlaces(sale.id);
    expect(line.drawn).toBe(40);
    expect(places).toEqual(
      await Promise.all(line.places.map(async (p) => ({ place: p.place, drawKey: await drawKey(seed, p.userId) }))),
    );
    const sorted = (await Promise.all(userIds.map((u) => drawKey(seed, u)))).sort();
    expect(places.map((p) => p.drawKey)).toEqual(sorted);
    expect(await merkleRoot(await Promise.all(places.map((p) => placeLeafHash(p.place, p.drawKey))))).toBe(published.placesRoot);

    // verify-queue, from the public routes alone: it checks out, and a buyer finds their place.
    const someone = userIds[17] as string;
    const verdict = await verifyQueue(BASE, sale.id, { userId: someone }, publicFetch);
    expect(verdict.problems).toEqual([]);
    expect(verdict).toMatchObject({
      ok: true,
      places: 40,
      user: { userId: someone, place: line.places.find((p) => p.userId === someone)?.place },
    });
    // The place the sale gave them checks out; one admitted place changed (by one) does not.
    const given = line.places.find((p) => p.userId === someone)?.place as number;
    expect((await verifyQueue(BASE, sale.id, { userId: someone, place: given }, publicFetch)).problems).toEqual([]);
    const otherPlace = given === 1 ? 2 : given - 1;
    const admittedChanged = await verifyQueue(BASE, sale.id, { userId: someone, place: otherPlace }, publicFetch);
    expect(admittedChanged.ok).toBe(false);
    expect(admittedChanged.problems).toEqual([
      `user ${someone} was given place ${otherPlace}, but the published draw puts their draw key at place ${given}`,
    ]);
    const stranger = await verifyQueue(BASE, sale.id, { userId: "never-joined" }, publicFetch);
    expect(stranger.problems).toEqual([expect.stringMatching(/^user never-joined .* holds no place in the pre-queue/)]);

    // A changed leaf, and a reordered page, are found.
    const changed = await verifyQueue(
      BASE,
      sale.id,
      {},
      tampered((page) => {
        const third = page.places[2];
        if (third) third.drawKey = `${third.drawKey.slice(0, 63)}${third.drawKey.endsWith("0") ? "1" : "0"}`;
      }),
    );
    expect(changed.ok).toBe(false);
    expect(changed.problems.join("\n")).toMatch(/the places' root is [0-9a-f]{64}, not the published placesRoot/);
    const reordered = await verifyQueue(
      BASE,
      sale.id,
      {},
      tampered((page) => {
        const [first, second] = page.places;
        if (first && second)
          page.places.splice(0, 2, { place: 1, drawKey: second.drawKey }, { place: 2, drawKey: first.drawKey });
      }),
    );
    expect(reordered.ok).toBe(false);
    expect(reordered.problems.join("\n")).toMatch(/place 2 is out of draw order/);
    expect(reordered.problems.join("\n")).toMatch(/not the published placesRoot/);
  });

  it("is built a page at a time, to the same pages and root however the steps are cut short, and a page changed in D1 is found", async () => {
    const { sale, userIds } = await joinedSale(11, "stepped");
    expect((await api.setSaleState(sale.id, "cancel")).status).toBe(200); // the seed is out at once
    const cancelled = (await findSale(env.DB, sale.id)) as Sale;
    // A D1 whose every other write batch fails: each step cut short is run again from where D1 says the run stands.
    const deps = { db: everyOtherBatchFails(env.DB), redis: redisFor(env), pageLeaves: 4 };
    let cuts = 0;
    let steps = 0;
    for (; steps < 100; steps++) {
      try {
        if ((await queueDrawStep(deps, cancelled)).next === "done") break;
      } catch {
        cuts++;
      }
    }
    expect(cuts).toBeGreaterThan(2);
    expect(await publicRun(sale.id)).toMatchObject({ phase: "ready", drawn: 11, pages: 3, pageLeaves: 4 });

    // Three pages of 4, 4 and 3 places, each pointing at the next; the whole checks out.
    const pages = [await api.queueDrawPlaces(sale.id, "0"), await api.queueDrawPlaces(sale.id, "2")];
    expect(pages.map((p) => [p.body?.places.length, p.body?.places[0]?.place, p.body?.next])).toEqual([
      [4, 1, "1"],
      [3, 9, null],
    ]);
    expect((await api.queueDrawPlaces(sale.id, "3")).body).toEqual({ places: [], next: null });
    const seed = (await api.queueDraw(sale.id)).body?.seed as string;
    const keys = (await Promise.all(userIds.map((u) => drawKey(seed, u)))).sort();
    expect((await publishedPlaces(sale.id)).map((p) => p.drawKey)).toEqual(keys);
    const verdict = await verifyQueue(BASE, sale.id, {}, publicFetch);
    expect(verdict.problems).toEqual([]);
    expect(verdict.places).toBe(11);

    // A page whose places are swapped in D1 (its root left as it was) no longer checks out.
    const row = await env.DB.prepare("SELECT draw_keys FROM queue_draw_pages WHERE sale_id = ? AND page = 1")
      .bind(Number(sale.id))
      .first<{ draw_keys: string }>();
    const swapped = `${row?.draw_keys.slice(64, 128)}${row?.draw_keys.slice(0, 64)}${row?.draw_keys.slice(128)}`;
    await env.DB.prepare("UPDATE queue_draw_pages SET draw_keys = ? WHERE sale_id = ? AND page = 1")
      .bind(swapped, Number(sale.id))
      .run();
    const tamperedInD1 = await verifyQueue(BASE, sale.id, {}, publicFetch);
    expect(tamperedInD1.ok).toBe(false);
    expect(tamperedInD1.problems.join("\n")).toMatch(/place 6 is out of draw order: its draw key does not come after place 5.s/);
    expect(tamperedInD1.problems.join("\n")).toMatch(/not the published placesRoot/);
  });

  it("starts again when the pre-queue changed while it was published, rather than publish pages of two lists", async () => {
    const { sale, userIds } = await joinedSale(6, "changed");
    expect((await api.setSaleState(sale.id, "cancel")).status).toBe(200);
    const cancelled = (await findSale(env.DB, sale.id)) as Sale;
    const deps = { db: env.DB, redis: redisFor(env), pageLeaves: 4 };
    while (((await publicRun(sale.id))?.pages ?? 0) < 2) await queueDrawStep(deps, cancelled);

    // Every page written, the root not yet: a member more. The join script refuses one after the
    // start, so it is written straight into Redis here, standing for a change nothing else can cause.
    const seed = (await api.queueDraw(sale.id)).body?.seed as string;
    const key = await drawKey(seed, `changed-${sale.id}-late`);
    const { preQueue } = bucketKeys(sale.id, prePartitionOf(key, cancelled.buckets), cancelled.buckets);
    await redis.zadd(preQueue, { score: 0, member: `${key}:0:changed-${sale.id}-late` });
    for (let steps = 0; steps < 20 && (await queueDrawStep(deps, cancelled)).next !== "done"; steps++);

    expect(await publicRun(sale.id)).toMatchObject({ phase: "ready", drawn: 7, pages: 2 });
    const keys = (await Promise.all([...userIds, `changed-${sale.id}-late`].map((u) => drawKey(seed, u)))).sort();
    expect((await publishedPlaces(sale.id)).map((p) => p.drawKey)).toEqual(keys);
    expect((await verifyQueue(BASE, sale.id, {}, publicFetch)).problems).toEqual([]);
  });

  it("publishes each presale lane's own line apart, its draw keys under the lane's seed, checked with --lane", async () => {
    const sale = await api.createSale({
      stock: 5,
      startsAt: inMs(2 * HOUR),
      endsAt: inMs(3 * HOUR),
      queue: { mode: "random", prequeueSec: 3 * 3_600, admitPerSec: 1_000 },
      lanes: [{ name: "members", startsAt: inMs(HOUR), stock: 3 }],
    });
    const codes = (await api.codeBatch(sale.id, "members", { count: 4 })).body?.codes ?? [];
    const members = codes.map((_, i) => `lane-${sale.id}-m${i}`);
    const others = Array.from({ length: 5 }, (_, i) => `lane-${sale.id}-p${i}`);
    // Code holders join the members' line, the others the public one (both pre-queues are open).
    await Promise.all(
      members.map(async (u, i) => expect((await api.joinWaitingRoom(sale.id, await userToken(u), codes[i])).status).toBe(200)),
    );
    await Promise.all(others.map(async (u) => expect((await api.joinWaitingRoom(sale.id, await userToken(u))).status).toBe(200)));
    expect((await api.queueDraw(sale.id, "nobody")).code).toBe("LANE_NOT_FOUND");

    expect((await api.setSaleState(sale.id, "cancel")).status).toBe(200);
    await eventually("both lines published", async () => {
      const views = await Promise.all([api.queueDraw(sale.id), api.queueDraw(sale.id, "members")]);
      return views.every((v) => v.body?.state === "ready");
    });
    const seed = (await api.queueDraw(sale.id)).body?.seed as string;
    const laneSeed = await lineSeed(seed, "members");
    expect((await publishedPlaces(sale.id, "members")).map((p) => p.drawKey)).toEqual(
      (await Promise.all(members.map((u) => drawKey(laneSeed, u)))).sort(),
    );
    expect((await publishedPlaces(sale.id)).map((p) => p.drawKey)).toEqual(
      (await Promise.all(others.map((u) => drawKey(seed, u)))).sort(),
    );

    // verify-queue --lane: the line checks out, and a member finds the place the lane's line gave them; not in the public line.
    const member = members[2] as string;
    const given = (await api.queuePlaces(sale.id, 1, "members")).places.find((p) => p.userId === member)?.place as number;
    const verdict = await verifyQueue(BASE, sale.id, { lane: "members", userId: member, place: given }, publicFetch);
    expect(verdict.problems).toEqual([]);
    expect(verdict).toMatchObject({ ok: true, places: 4, user: { place: given } });
    const elsewhere = await verifyQueue(BASE, sale.id, { userId: member }, publicFetch);
    expect(elsewhere.problems).toEqual([expect.stringMatching(/holds no place in the pre-queue/)]);
    expect(elsewhere.places).toBe(5);
  });
});
