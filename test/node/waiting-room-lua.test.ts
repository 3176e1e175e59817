// The waiting room's scripts (lua/waiting-room-join.lua, lua/waiting-room-progress.lua) and the pass rules
// of lua/checkout.lua, on a real redis-server through the project's Upstash gateway, called
// with the Worker's own key lists and reply parser.
import { readFileSync } from "node:fs";
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway } from "../../dev/gateway/server.ts";
import { type RedisServer, startRedisServer } from "../../dev/lib/redis-server.ts";
import { eventually } from "../../dev/lib/wait.ts";
import { parseCheckoutReply, type Reservation } from "../../src/shared/checkout-reply.ts";
import {
  allBuckets,
  bucketKeyOf,
  bucketOf,
  buyerKeys,
  checkoutScriptKeys,
  type JoinKind,
  PUBLIC_LINE,
  saleKeys,
  waitingRoomJoinCall,
  waitingRoomProgressKeys,
} from "../../src/shared/keys.ts";
import { drawKey, drawOrder } from "../../src/shared/waiting-room-draw.ts";
import { parseProgress } from "../../src/shared/waiting-room-progress.ts";

const lua = (name: string) => readFileSync(new URL(`../../lua/${name}.lua`, import.meta.url), "utf8");
const TOKEN = "queue-lua-test-token";
const SEED = "5eed".repeat(16);
/** Every sale here is split into three buckets: passes land in their users' buckets, wherever the line keeps them. */
const BUCKETS = 3;
/** Split as a new sale is, under a key of its own. */
const SPLIT = { count: BUCKETS, key: bucketKeyOf("fedcba9876543210fedcba9876543210") };

let server: RedisServer;
let gateway: Gateway;
let redis: Redis;
let seq = 0;

beforeAll(async () => {
  server = await startRedisServer();
  gateway = await startGateway({ redisUrl: server.url, token: TOKEN });
  redis = new Redis({ url: gateway.url, token: TOKEN, automaticDeserialization: false, enableTelemetry: false });
});
afterAll(async () => {
  await gateway?.close();
  await server?.stop();
});

interface QueuedSale {
  mode?: "fifo" | "random" | "off";
  stock?: number;
  /** ms from now */
  startsIn?: number;
  opensIn?: number;
  rate?: number;
  ttlSec?: number;
  limit?: number;
}

async function newSale(opts: QueuedSale = {}): Promise<string> {
  const id = `q${++seq}`;
  const now = Date.now();
  const starts = now + (opts.startsIn ?? -1000);
  const args = [1, opts.stock ?? 3, starts, now + 600_000, 7, 100_000, 100_000, "q", opts.limit ?? 1, "active"];
  const queue = [opts.mode ?? "fifo", now + (opts.opensIn ?? -60_000), opts.rate ?? 1000, opts.ttlSec ?? 60, BUCKETS, 0, "", ""];
  await redis.createScript(lua("sale-sync")).exec([saleKeys(id).meta], [...args, ...queue].map(String));
  return id;
}

/** Starts a sale that is still in its pre-queue, as an edit of its window would. */
const startNow = (saleId: string) => redis.hset(saleKeys(saleId).meta, { starts: String(Date.now() - 1) });

/** The script's own answer to one join (TOTALS_MISSING included). */
async function joinOnce(saleId: string, user: string, key: string, kind: JoinKind): Promise<unknown[]> {
  const { keys, args } = waitingRoomJoinCall(saleId, user, SPLIT, key, kind);
  const reply = (await redis.createScript(lua("waiting-room-join")).exec(keys, args)) as unknown[];
  expect(reply[0]).toBe("waiting-room-join/3");
  return reply;
}

/** A join as src/admission/waiting-room.ts makes it: missing running totals are written by a progress call first. */
async function join(
  saleId: string,
  user: string,
  random = false,
  kind: JoinKind = "person",
): Promise<{ outcome: string; place: number; quiet?: true }> {
  const key = random ? await drawKey(SEED, user) : "";
  let reply = await joinOnce(saleId, user, key, kind);
  if (reply[2] === "TOTALS_MISSING") {
    await progress(saleId);
    reply = await joinOnce(saleId, user, key, kind);
  }
  return { outcome: String(reply[2]), place: Number(reply[3]), ...(reply[6] === 1 && { quiet: true }) };
}

/** A no-show grace longer than any pass here: passes hold their unit until they expire, unless a test says otherwise. */
const LONG_GRACE_MS = 3_600_000;

async function progress(saleId: string, maxAdmit = 5000, graceMs = LONG_GRACE_MS) {
  const reply = await redis
    .createScript(lua("waiting-room-progress"))
    .exec(waitingRoomProgressKeys(saleId, BUCKETS), [
      String(maxAdmit),
      String(BUCKETS),
      PUBLIC_LINE,
      String(graceMs),
      String(Math.max(60_000, 2 * graceMs)),
    ]);
  const { at, startsAt: starts, ...rest } = parseProgress(reply);
  return { at, starts, ...rest };
}

/** One merged checkout call: each buyer with the place its pass names ("" for no pass). */
async function checkoutAll(saleId: string, buyers: [string, number | ""][]): Promise<Reservation[]> {
  const { keys, bucketSlots } = checkoutScriptKeys(
    saleId,
    0,
    SPLIT,
    buyers.map(([user]) => user),
  );
  const args = buyers.flatMap(([user, place], i) => [user, "1", "", String(place), String(bucketSlots[i]), "", ""]);
  const reply = parseCheckoutReply(
    await redis.createScript(lua("checkout")).exec(keys, [String(BUCKETS), "0", "", ...args]),
    buyers.length,
  );
  if (!reply.reservations) throw new Error(`the sale is split into ${reply.buckets} buckets`);
  return reply.reservations;
}

/** One buyer's checkout with the place its pass names ("" for no pass). */
const checkout = async (saleId: string, user: string, place: number | "" = "") =>
  (await checkoutAll(saleId, [[user, place]]))[0] as Reservation;

const passOf = async (saleId: string, user: string) => redis.hget<string>(buyerKeys(saleId, user, SPLIT).passes, user);

describe("waiting-room-join.lua", () => {
  it("opens at qopens, places fifo joiners in arrival order, and answers a second join with the same place", async () => {
    const early = await newSale({ opensIn: 60_000, startsIn: 120_000 });
    expect(await join(early, "a")).toEqual({ outcome: "NOT_OPEN", place: 0 });
    const off = await newSale({ mode: "off" });
    expect(await join(off, "a")).toEqual({ outcome: "OFF", place: 0 });
    expect(await join("nope", "a")).toEqual({ outcome: "NOT_FOUND", place: 0 });

    const sale = await newSale({ startsIn: 60_000 });
    expect((await join(sale, "a")).place).toBe(1);
    expect((await join(sale, "b")).place).toBe(2);
    expect(await join(sale, "a")).toEqual({ outcome: "JOINED", place: 1 });
    const places = await Promise.all(allBuckets(sale, BUCKETS).map((b) => redis.hlen(b.places)));
    expect(places.reduce((n, p) => n + p, 0)).toBe(2);
  });

  it("answers fresh for the one call that placed the buyer, whoever else joins at once, and never for a place held", async () => {
    const sale = await newSale({ startsIn: 60_000 });
    const fresh = (reply: unknown[]) => reply[7];
    const twins = await Promise.all(Array.from({ length: 10 }, () => joinOnce(sale, "twin", "", "person")));
    expect(twins.map(fresh).sort()).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    expect(new Set(twins.map((r) => r[3]))).toEqual(new Set([1]));
    expect(fresh(await joinOnce(sale, "quiet-one", "", "quiet"))).toBe(1);
    expect(fresh(await joinOnce(sale, "quiet-one", "", "person"))).toBe(0);
    // A random sale's pre-queue joiner: fresh when it joins, not when its place is answered after the start.
    const random = await newSale({ mode: "random", startsIn: 60_000 });
    await progress(random); // writes the running totals a first pre-queue join needs
    const key = await drawKey(SEED, "drawn");
    expect(fresh(await joinOnce(random, "drawn", key, "person"))).toBe(1);
    await startNow(random);
    const placed = await joinOnce(random, "drawn", key, "person");
    expect([placed[3], fresh(placed)]).toEqual([1, 0]);
    // Not joined: not fresh.
    const early = await newSale({ opensIn: 60_000, startsIn: 120_000 });
    expect(await joinOnce(early, "a", "", "person")).toMatchObject({ 2: "NOT_OPEN", 7: 0 });
  });

  it("places a random sale's pre-queue by draw key at the start, and later joiners behind in arrival order", async () => {
    const sale = await newSale({ mode: "random", startsIn: 60_000, stock: 40 });
    const early = Array.from({ length: 30 }, (_, i) => `early-${i}`);
    for (const user of early) expect(await join(sale, user, true)).toEqual({ outcome: "JOINED", place: 0 });
    await startNow(sale);
    const late = await join(sale, "late-0", true);
    expect(late.place).toBe(31);
    const drawn = await drawOrder(SEED, early);
    expect(drawn).not.toEqual(early);
    for (const [i, user] of drawn.entries()) expect((await join(sale, user, true)).place).toBe(i + 1);
    expect((await join(sale, "late-1", true)).place).toBe(32);
    // The pre-queue is split over every bucket by draw key, and still let in in the draw's order.
    const sizes = await Promise.all(allBuckets(sale, BUCKETS).map((b) => redis.zcard(b.preQueue)));
    expect(sizes.every((n) => n > 0)).toBe(true);
    expect(await progress(sale)).toMatchObject({ admitted: 32, joined: 32 });
    for (const [i, user] of [...drawn, "late-0", "late-1"].entries()) {
      expect(String(await passOf(sale, user))).toMatch(new RegExp(`^${i + 1}:\\d+$`));
    }
  });
});

describe("quiet joiners", () => {
  it("take a place nobody else holds, keep it, and are let in as nobody's: a pass record marked quiet, no unit held back", async () => {
    const sale = await newSale({ stock: 2, rate: 1000 });
    expect(await join(sale, "person-a")).toEqual({ outcome: "JOINED", place: 1 });
    expect(await join(sale, "bot", false, "quiet")).toEqual({ outcome: "JOINED", place: 2, quiet: true });
    expect(await join(sale, "person-b")).toEqual({ outcome: "JOINED", place: 3 });
    // Joining again, as anyone: the same place, still quiet.
    expect(await join(sale, "bot")).toEqual({ outcome: "JOINED", place: 2, quiet: true });
    expect(await join(sale, "person-a", false, "quiet")).toEqual({ outcome: "JOINED", place: 1 });
    // Two units: the quiet place between the people lapses as it is let in, which frees the
    // unit it would have held for the next call: both people are let in.
    expect(await progress(sale)).toMatchObject({ admitted: 2, joined: 3, expired: 1 });
    expect(await progress(sale)).toMatchObject({ admitted: 3, joined: 3, expired: 1 });
    // The quiet place's record is a person's, marked: same shape, same time to live.
    const [quiet, first] = [String(await passOf(sale, "bot")), String(await passOf(sale, "person-a"))];
    expect(quiet).toMatch(/^2:\d+:q$/);
    expect(first).toMatch(/^1:\d+$/);
    expect(quiet.split(":")[1]).toBe(first.split(":")[1]); // let in by the same call: the same expiry
    expect(await redis.zscore(buyerKeys(sale, "bot", SPLIT).live, "bot")).toBeNull();
    // Its pass is refused as sold out while units are left, spending nothing; a wrong place is still invalid.
    expect(await checkout(sale, "bot", 2)).toEqual({ code: "SOLD_OUT", quiet: true });
    expect(await checkout(sale, "bot", 3)).toEqual({ code: "QUEUE_PASS_INVALID" });
    expect(await redis.hget(saleKeys(sale).meta, "remaining")).toBe("2");
    expect(await passOf(sale, "bot")).toBe(quiet);
    expect((await checkout(sale, "person-b", 3)).code).toBe("OK");
    expect((await checkout(sale, "person-a", 1)).code).toBe("OK");
    expect(await redis.hget(saleKeys(sale).meta, "remaining")).toBe("0");
    expect(await progress(sale)).toMatchObject({ admitted: 3, used: 2, expired: 1 });
  });

  it("of a random sale's pre-queue are drawn like anyone, and their place never comes up", async () => {
    const sale = await newSale({ mode: "random", startsIn: 60_000, stock: 40 });
    const people = Array.from({ length: 10 }, (_, i) => `drawn-${i}`);
    for (const user of people) await join(sale, user, true);
    expect(await join(sale, "drawn-bot", true, "quiet")).toEqual({ outcome: "JOINED", place: 0, quiet: true });
    await startNow(sale);
    const order = await drawOrder(SEED, [...people, "drawn-bot"]);
    for (const [i, user] of order.entries()) {
      expect(await join(sale, user, true)).toEqual({
        outcome: "JOINED",
        place: i + 1,
        ...(user === "drawn-bot" && { quiet: true }),
      });
    }
    await progress(sale); // a call whose places include the quiet one lets the rest in on the next
    expect(await progress(sale)).toMatchObject({ admitted: 11, joined: 11, expired: 1 });
    // Its pass record is in its own bucket, where a person's would be, marked quiet.
    const place = order.indexOf("drawn-bot") + 1;
    expect(String(await passOf(sale, "drawn-bot"))).toMatch(new RegExp(`^${place}:\\d+:q$`));
    for (const user of people) expect(String(await passOf(sale, user))).toMatch(/^\d+:\d+$/);
    expect(await checkout(sale, "drawn-bot", place)).toEqual({ code: "SOLD_OUT", quiet: true });
    expect(await redis.hget(saleKeys(sale).meta, "remaining")).toBe("40");
  });

  it("of a pre-queue stored before members carried their bucket keep their place, and lapse with no pass record", async () => {
    const sale = await newSale({ mode: "random", startsIn: 60_000, stock: 40 });
    const people = Array.from({ length: 6 }, (_, i) => `kept-${i}`);
    for (const user of people) await join(sale, user, true);
    // Joined quietly as such a pre-queue held it: "<draw key>:q:<user id>", its place "qpre".
    const key = await drawKey(SEED, "old-bot");
    const [, , places, , preQueue] = waitingRoomJoinCall(sale, "old-bot", SPLIT, key, "quiet").keys as string[];
    await redis.zadd(preQueue as string, { score: 0, member: `${key}:q:old-bot` });
    await redis.hset(places as string, { "old-bot": "qpre" });
    await progress(sale); // the running totals, counted afresh
    await startNow(sale);
    const place = (await drawOrder(SEED, [...people, "old-bot"])).indexOf("old-bot") + 1;
    expect(await join(sale, "old-bot", true)).toEqual({ outcome: "JOINED", place, quiet: true });
    await progress(sale);
    expect(await progress(sale)).toMatchObject({ admitted: 7, joined: 7, expired: 1 });
    expect(await passOf(sale, "old-bot")).toBeNull();
    for (const user of people) expect(String(await passOf(sale, user))).toMatch(/^\d+:\d+$/);
  });
});

describe("the join's running totals", () => {
  it("are written by the progress script for a sale stored without them, and the places stay right", async () => {
    const sale = await newSale({ mode: "random", startsIn: 60_000, stock: 40 });
    const early = Array.from({ length: 12 }, (_, i) => `kept-${i}`);
    for (const user of early) await join(sale, user, true);
    // As a sale stored before the totals were kept: its pre-queue without them.
    await redis.hdel(saleKeys(sale).queue.counters, "drawn");
    await redis.del(saleKeys(sale).queue.drawSizes);
    await startNow(sale);
    const key = await drawKey(SEED, "kept-0");
    const { keys, args } = waitingRoomJoinCall(sale, "kept-0", SPLIT, key, "person");
    const missing = (await redis.createScript(lua("waiting-room-join")).exec(keys, args)) as unknown[];
    expect(missing[2]).toBe("TOTALS_MISSING");
    expect(await progress(sale, 0)).toMatchObject({ drawn: 12 });
    for (const [i, user] of (await drawOrder(SEED, early)).entries()) expect((await join(sale, user, true)).place).toBe(i + 1);
    expect((await join(sale, "after-0", true)).place).toBe(13);
  });
});

describe("the line split over the buckets", () => {
  it("gives places one run 1..n in arrival order across every bucket's line, and admits them in place order", async () => {
    const sale = await newSale({ stock: 100, rate: 1000 });
    // Joins at once land in some order: each place once, 1..n.
    const crowd = Array.from({ length: 30 }, (_, i) => `crowd-${i}`);
    const placeOf = new Map<string, number>();
    for (const [i, joined] of (await Promise.all(crowd.map((user) => join(sale, user)))).entries()) {
      placeOf.set(crowd[i] as string, joined.place);
    }
    // Joins one after another: arrival order is place order.
    for (const [i, user] of ["late-0", "late-1", "late-2"].entries()) {
      const joined = await join(sale, user);
      expect(joined.place).toBe(31 + i);
      placeOf.set(user, joined.place);
    }
    expect([...placeOf.values()].sort((a, b) => a - b)).toEqual(Array.from({ length: 33 }, (_, i) => i + 1));

    // Each bucket's line holds only its own joiners, scored by rank (here the place: no pre-queue); none holds them all.
    for (const [b, keys] of allBuckets(sale, BUCKETS).entries()) {
      const members = (await redis.zrange<string[]>(keys.line, 0, -1, { withScores: true })).map(String);
      expect(members.length).toBeGreaterThan(0);
      expect(members.length).toBeLessThan(2 * 33);
      for (let i = 0; i < members.length; i += 2) {
        const user = members[i] as string;
        expect(bucketOf(user, SPLIT)).toBe(b);
        expect(Number(members[i + 1])).toBe(placeOf.get(user));
      }
    }

    // Admission a few places a call: every place up to `admitted` has its pass, none after.
    const expectPassesThrough = async (admitted: number) => {
      for (const [user, place] of placeOf) {
        const pass = await passOf(sale, user);
        if (place <= admitted) expect(String(pass)).toMatch(new RegExp(`^${place}:\\d+$`));
        else expect(pass).toBeNull();
      }
    };
    expect(await progress(sale, 7)).toMatchObject({ admitted: 7, joined: 33 });
    await expectPassesThrough(7);
    expect((await progress(sale, 20)).admitted).toBe(27);
    await expectPassesThrough(27);
    expect((await progress(sale)).admitted).toBe(33);
    await expectPassesThrough(33);
  });
});

describe("waiting-room-progress.lua", () => {
  it("admits at the pace, never more places than units left, and gives each admitted place a pass", async () => {
    const sale = await newSale({ stock: 3, rate: 1000 });
    for (const user of ["a", "b", "c", "d", "e"]) await join(sale, user);
    expect(await progress(sale)).toMatchObject({ admitted: 3, joined: 5, remaining: 3, used: 0, expired: 0, state: "active" });
    expect(String(await passOf(sale, "c"))).toMatch(/^3:\d+$/);
    expect(await passOf(sale, "d")).toBeNull();

    const slow = await newSale({ stock: 100, rate: 2 });
    for (const user of ["a", "b", "c", "d", "e"]) await join(slow, user);
    // 2 at the start, 2 more each second after, by Redis' clock.
    const paced = await progress(slow);
    expect(paced.admitted).toBe(Math.min(5, Math.floor(((paced.at - paced.starts) * 2) / 1000) + 2));
  });

  it("admits at most the given number of places per call; the next call goes on", async () => {
    const sale = await newSale({ stock: 10, rate: 1000 });
    for (const user of ["a", "b", "c", "d"]) await join(sale, user);
    expect((await progress(sale, 3)).admitted).toBe(3);
    expect((await progress(sale, 3)).admitted).toBe(4);
  });

  it("admits nobody before the start, nor into a paused sale", async () => {
    const sale = await newSale({ startsIn: 60_000 });
    await join(sale, "a");
    expect((await progress(sale)).admitted).toBe(0);
    await redis.hset(saleKeys(sale).meta, { starts: String(Date.now() - 1), state: "paused" });
    expect(await progress(sale)).toMatchObject({ admitted: 0, state: "paused" });
  });

  it("counts a pass unused after its grace a no-show and lets the next place in; its holder still buys while a unit is left", async () => {
    const sale = await newSale({ stock: 2, rate: 1000, ttlSec: 60 });
    for (const user of ["a", "b", "c", "d", "e"]) await join(sale, user);
    const graceMs = 1_000;
    expect(await progress(sale, 5000, graceMs)).toMatchObject({ admitted: 2, fresh: 2, noShows: 0 });
    // Neither a nor b buys within the grace: both are no-shows, and c and d are let in.
    const after = await eventually("a's and b's grace to pass", async () => {
      const p = await progress(sale, 5000, graceMs);
      return p.noShows === 2 && p;
    });
    expect(after).toMatchObject({ admitted: 4, fresh: 2, remaining: 2, expired: 0 });
    // a comes back with a pass still valid and buys: the deduct decides, nothing is sold twice.
    expect((await checkout(sale, "a", 1)).code).toBe("OK");
    expect((await checkout(sale, "c", 3)).code).toBe("OK");
    expect(await checkout(sale, "d", 4)).toEqual({ code: "SOLD_OUT" });
    expect(await redis.hget(saleKeys(sale).meta, "remaining")).toBe("0");
    // Sold out: nobody more is let in, whatever the no-shows.
    await eventually("d's grace to pass", async () => (await progress(sale, 5000, graceMs)).noShows === 3);
    expect((await progress(sale, 5000, graceMs)).admitted).toBe(4);
  });

  it("holds admission while qpaused, keeping every place, then goes on from the current place at the rate", async () => {
    const sale = await newSale({ stock: 100, rate: 2 });
    for (const user of ["a", "b", "c", "d", "e", "f", "g", "h"]) await join(sale, user);
    const first = await progress(sale);
    expect(first.admitted).toBeGreaterThanOrEqual(2);
    await redis.hset(saleKeys(sale).meta, { qpaused: "1", notice: "back soon" });
    const held = await progress(sale);
    expect(held).toMatchObject({ state: "paused", notice: "back soon", joined: 8 });
    // Long enough for the pace to have let everyone in, had it kept counting through the hold.
    await new Promise((r) => setTimeout(r, 2_500));
    expect((await progress(sale)).admitted).toBe(held.admitted);
    await redis.hset(saleKeys(sale).meta, { qpaused: "0" });
    const resumed = await progress(sale);
    // A second's worth at once from where the line stood, not the hold's backlog.
    expect(resumed.state).toBe("active");
    expect(resumed.admitted).toBeLessThanOrEqual(held.admitted + 2 + 2 * Math.ceil((Date.now() - resumed.at) / 1000));
    expect(resumed.admitted).toBeGreaterThan(held.admitted);
  });

  it("applies a new rate from the current place at its next call", async () => {
    const sale = await newSale({ stock: 1000, rate: 1 });
    for (let i = 0; i < 50; i++) await join(sale, `u${i}`);
    const before = await progress(sale);
    expect(before.admitted).toBeLessThan(10);
    await redis.hset(saleKeys(sale).meta, { qrate: "20" });
    const after = await progress(sale);
    expect(after.admitted).toBeGreaterThanOrEqual(before.admitted + 20);
    await redis.hset(saleKeys(sale).meta, { qrate: "1" });
    const slowed = await progress(sale);
    // Slowed: one more second's worth at most, not the twenty-a-second pace's credit.
    expect(slowed.admitted).toBeLessThanOrEqual(after.admitted + 1 + Math.ceil((Date.now() - after.at) / 1000));
  });

  it("paces a line opened after the start from its opening, not from the start", async () => {
    const sale = await newSale({ stock: 1000, rate: 2, startsIn: -600_000 });
    const opened = Date.now();
    await redis.hset(saleKeys(sale).meta, { qopens: String(opened) });
    for (let i = 0; i < 50; i++) await join(sale, `late${i}`);
    const p = await progress(sale);
    // Ten minutes since the start would let all 50 in: from the opening, a second's worth and two a second since.
    expect(p.admitted).toBeLessThanOrEqual(2 + 2 * Math.ceil((Date.now() - opened) / 1000));
    expect(p.admitted).toBeLessThan(50);
  });

  it("measures the places let in and the units given back over its window", async () => {
    const sale = await newSale({ stock: 5, rate: 1000 });
    for (const user of ["a", "b", "c"]) await join(sale, user);
    expect((await progress(sale)).window.admitted).toBe(3);
    const bought = await checkout(sale, "a", 1);
    if (bought.code !== "OK") throw new Error(`expected OK, got ${bought.code}`);
    const keys = buyerKeys(sale, "a", SPLIT);
    await redis.eval(
      lua("return"),
      [saleKeys(sale).meta, keys.buyers, keys.outbox, keys.pending, keys.returned],
      [bought.orderId, "a", "1", String(BUCKETS)],
    );
    const p = await progress(sale);
    expect(p.window).toMatchObject({ admitted: 3, returned: 1 });
    expect(p.window.ms).toBeGreaterThan(0);
    expect(p.taken).toBe(1); // one unit taken, given back since
  });
});

describe("checkout.lua with a waiting room", () => {
  it("sells only against the buyer's own admitted pass, once, and consumes it with the deduct", async () => {
    const sale = await newSale({ stock: 5, rate: 1000 });
    for (const user of ["a", "b", "c"]) await join(sale, user);
    await progress(sale);
    expect(await checkout(sale, "a")).toEqual({ code: "QUEUE_PASS_REQUIRED" });
    expect(await checkout(sale, "a", 2)).toEqual({ code: "QUEUE_PASS_INVALID" }); // b's place
    expect(await checkout(sale, "stranger", 1)).toEqual({ code: "QUEUE_PASS_INVALID" });
    expect(await redis.hget(saleKeys(sale).meta, "remaining")).toBe("5"); // nothing reserved
    expect((await checkout(sale, "a", 1)).code).toBe("OK");
    expect(await passOf(sale, "a")).toBe("1:used");
    expect(await checkout(sale, "a", 1)).toEqual({ code: "QUEUE_PASS_USED" });
    expect(await redis.zscore(buyerKeys(sale, "a", SPLIT).live, "a")).toBeNull();
    expect(await progress(sale)).toMatchObject({ admitted: 3, used: 1, remaining: 4 });
  });

  it("refuses a second use of one pass inside one merged call", async () => {
    const sale = await newSale({ stock: 5, limit: 2 });
    await join(sale, "a");
    await progress(sale);
    const replies = await checkoutAll(sale, [
      ["a", 1],
      ["a", 1],
    ]);
    expect(replies.map((r) => r.code)).toEqual(["OK", "QUEUE_PASS_USED"]);
    expect(await redis.hget(saleKeys(sale).meta, "remaining")).toBe("4");
  });

  it("an expired pass is refused and lets the next place in; so does a unit that comes back", async () => {
    const sale = await newSale({ stock: 2, rate: 1000, ttlSec: 1 });
    for (const user of ["a", "b", "c", "d"]) await join(sale, user);
    expect((await progress(sale)).admitted).toBe(2);
    const bought = await checkout(sale, "a", 1);
    if (bought.code !== "OK") throw new Error(`expected OK, got ${bought.code}`);
    // b lets its second pass by: c is let in, and only then.
    const afterExpiry = await eventually("b's pass to expire and c to be admitted", async () => {
      const p = await progress(sale);
      return p.admitted === 3 && p;
    });
    expect(afterExpiry).toMatchObject({ used: 1, expired: 1, remaining: 1 });
    expect(await checkout(sale, "b", 2)).toEqual({ code: "QUEUE_PASS_EXPIRED" });
    expect(await redis.hget(saleKeys(sale).meta, "remaining")).toBe("1");
    expect((await checkout(sale, "c", 3)).code).toBe("OK");
    expect((await progress(sale)).admitted).toBe(3); // sold out: d waits

    // a's order is cancelled: its unit goes back, and d, the next place, is let in.
    const keys = buyerKeys(sale, "a", SPLIT);
    await redis.eval(
      lua("return"),
      [saleKeys(sale).meta, keys.buyers, keys.outbox, keys.pending, keys.returned],
      [bought.orderId, "a", "1", String(BUCKETS)],
    );
    expect(await progress(sale)).toMatchObject({ admitted: 4, remaining: 1 });
    expect((await checkout(sale, "d", 4)).code).toBe("OK");
  });

  it("an unqueued sale needs no pass", async () => {
    const sale = await newSale({ mode: "off" });
    expect((await checkout(sale, "a")).code).toBe("OK");
  });
});
