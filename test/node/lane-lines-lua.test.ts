// The presale lanes' own lines (docs/lanes.md, "Lanes with a waiting room"): lua/waiting-room-join.lua,
// lua/waiting-room-progress.lua and lua/checkout.lua over a lane's line, on a real redis-server
// through the project's Upstash gateway, called with the Worker's own key lists and reply parser.
import { describe, expect, it } from "vitest";
import { eventually } from "../../dev/lib/wait.ts";
import { codeHash, codeRecord } from "../../src/admission/access-codes.ts";
import { parseCheckoutReply, type Reservation } from "../../src/shared/checkout-reply.ts";
import {
  accessCodeKeys,
  bucketKeyOf,
  buyerKeys,
  checkoutScriptKeys,
  codeShardOf,
  type Line,
  lineKeysOf,
  PUBLIC_LINE,
  saleKeys,
  waitingRoomJoinCall,
  waitingRoomKeys,
  waitingRoomProgressKeys,
} from "../../src/shared/keys.ts";
import { drawKey, drawOrder, lineSeed } from "../../src/shared/waiting-room-draw.ts";
import { parseProgress } from "../../src/shared/waiting-room-progress.ts";
import { lua, scriptRedis } from "../support/script-redis.ts";

const SEED = "1a2e".repeat(16);
const BUCKETS = 3;
const SPLIT = { count: BUCKETS, key: bucketKeyOf("0123456789abcdef0123456789abcdef") };
/** The pre-queue's length: each line opens this long before its start. */
const PREQUEUE_MS = 60_000;

const redisOf = scriptRedis("lane-lines-lua-test-token");
let seq = 0;

interface LanedSale {
  mode?: "fifo" | "random";
  stock?: number;
  limit?: number;
  /** The lanes: name, start (ms from now), allotment. */
  lanes: { name: string; startsIn: number; stock?: number }[];
  /** The public start, ms from now. */
  publicIn: number;
}

/** A queued sale with lanes, as lua/sale-sync.lua loads one: its public line opens PREQUEUE_MS before the public start. */
async function newSale(opts: LanedSale): Promise<string> {
  const id = `ll${++seq}`;
  const now = Date.now();
  const starts = now + opts.publicIn;
  const lanes = opts.lanes.map((l) => `${l.name}=${now + l.startsIn}`).join(",");
  const allotments = opts.lanes.flatMap((l) => (l.stock === undefined ? [] : [`${l.name}=${l.stock}`])).join(",");
  const args = [1, opts.stock ?? 10, starts, now + 600_000, 7, 100_000, 100_000, "ll", opts.limit ?? 1, "active"];
  const queue = [opts.mode ?? "fifo", starts - PREQUEUE_MS, 1000, 60, BUCKETS, 0, lanes, allotments];
  await redisOf()
    .createScript(lua("sale-sync"))
    .exec([saleKeys(id).meta], [...args, ...queue].map(String));
  return id;
}

/** Moves the sale's lanes and public start to these offsets from now, as an edit before the opening would. */
async function moveTo(saleId: string, lanes: [string, number][], publicIn: number) {
  const now = Date.now();
  await redisOf().hset(saleKeys(saleId).meta, {
    lanes: lanes.map(([name, at]) => `${name}=${now + at}`).join(","),
    starts: String(now + publicIn),
    qopens: String(now + publicIn - PREQUEUE_MS),
  });
}

/** A batch of codes of `lane`, each with `uses` uses; returns their hashes. */
async function codes(
  saleId: string,
  lane: string,
  count: number,
  uses = 1,
  batch = `cb_${lane}`,
  expiresAt: number | null = null,
) {
  const hashes = await Promise.all(Array.from({ length: count }, (_, i) => codeHash(saleId, `${batch}-${i}`)));
  for (const hash of hashes)
    await redisOf().hset(accessCodeKeys(saleId).shard(codeShardOf(hash)), { [hash]: codeRecord(batch, lane, uses, expiresAt) });
  return hashes;
}
const codeOf = async (saleId: string, hash: string) =>
  String(await redisOf().hget(accessCodeKeys(saleId).shard(codeShardOf(hash)), hash));

/** One join as src/admission/waiting-room.ts makes it: missing running totals are written by a progress call first. */
async function join(saleId: string, user: string, line: Line, code = ""): Promise<{ outcome: string; place: number }> {
  const key =
    (await redisOf().hget(saleKeys(saleId).meta, "qmode")) === "random" ? await drawKey(await lineSeed(SEED, line), user) : "";
  const once = async () => {
    const { keys, args } = waitingRoomJoinCall(saleId, user, SPLIT, key, "person", line, code);
    return (await redisOf().createScript(lua("waiting-room-join")).exec(keys, args)) as unknown[];
  };
  let reply = await once();
  if (reply[2] === "TOTALS_MISSING") {
    await progress(saleId, line);
    reply = await once();
  }
  return { outcome: String(reply[2]), place: Number(reply[3]) };
}

/** Where `line` stands after one progress call; `graceMs`: the no-show grace (long enough by default that no pass becomes one). */
async function progress(saleId: string, line: Line, graceMs = 3_600_000) {
  const reply = await redisOf()
    .createScript(lua("waiting-room-progress"))
    .exec(waitingRoomProgressKeys(saleId, BUCKETS, line), [
      "5000",
      String(BUCKETS),
      line,
      String(graceMs),
      String(Math.max(60_000, 2 * graceMs)),
    ]);
  return parseProgress(reply);
}

/** A buyer of a merged call: who, the claim their pass makes ("" none, "<place>", "<place>@<lane>"), their code's hash. */
type Buyer = [user: string, claim: string, code?: string];

/** One merged call as src/checkout/reserve.ts sends it, naming `line`'s keys. */
async function checkoutAll(saleId: string, line: Line, buyers: Buyer[]): Promise<Reservation[]> {
  const { keys, bucketSlots, codeKeyCount, codeRefs } = checkoutScriptKeys(
    saleId,
    0,
    SPLIT,
    buyers.map(([user]) => user),
    buyers.map(([, , code]) => code),
    line,
  );
  const args = buyers.flatMap(([user, claim], i) => [user, "1", "", claim, String(bucketSlots[i]), codeRefs[i] as string, ""]);
  const reply = parseCheckoutReply(
    await redisOf()
      .createScript(lua("checkout"))
      .exec(keys, [String(BUCKETS), String(codeKeyCount), line, ...args]),
    buyers.length,
  );
  if (!reply.reservations) throw new Error(`the sale is split into ${reply.buckets} buckets`);
  return reply.reservations;
}
const checkout = async (saleId: string, line: Line, buyer: Buyer) => (await checkoutAll(saleId, line, [buyer]))[0] as Reservation;
const passOf = (saleId: string, line: Line, user: string) =>
  redisOf().hget<string>(lineKeysOf(saleId, line, user, SPLIT).passes, user);

describe("a lane's own line: waiting-room-join.lua", () => {
  it("opens the pre-queue's length before the lane's start and takes codes of its lane or an earlier one, each bound to its joiner, no use spent", async () => {
    // members' window is open; fans' line is in its pre-queue; the public line is not open yet.
    const sale = await newSale({
      lanes: [
        { name: "members", startsIn: -1_000 },
        { name: "fans", startsIn: 30_000 },
      ],
      publicIn: 120_000,
    });
    const [a, b, spare] = (await codes(sale, "members", 3)) as [string, string, string];
    const [fan, spentFan] = (await codes(sale, "fans", 2)) as [string, string];
    await redisOf().hset(accessCodeKeys(sale).shard(codeShardOf(spentFan)), {
      [spentFan]: codeRecord("cb_fans", "fans", 0, null),
    });

    expect(await join(sale, "ann", "members")).toEqual({ outcome: "ACCESS_CODE_REQUIRED", place: 0 });
    expect(await join(sale, "ann", "members", "0".repeat(32))).toEqual({ outcome: "ACCESS_CODE_INVALID", place: 0 });
    expect((await join(sale, "ann", "members", fan)).outcome).toBe("ACCESS_CODE_INVALID"); // a later lane's
    expect(await join(sale, "ann", "members", a)).toEqual({ outcome: "JOINED", place: 1 });
    // Bound to ann at the join, with its one use left; nobody else queues with it.
    expect(await codeOf(sale, a)).toBe("cb_members|members|1|0|ann");
    expect(await redisOf().hget(accessCodeKeys(sale).batches, "cb_members:bound")).toBe("1");
    expect((await join(sale, "bob", "members", a)).outcome).toBe("ACCESS_CODE_INVALID");
    // Joining again answers the place held, code or none.
    expect(await join(sale, "ann", "members")).toEqual({ outcome: "JOINED", place: 1 });
    expect(await join(sale, "ann", "members", a)).toEqual({ outcome: "JOINED", place: 1 });
    expect(await redisOf().hget(accessCodeKeys(sale).batches, "cb_members:bound")).toBe("1");
    expect(await join(sale, "bob", "members", b)).toEqual({ outcome: "JOINED", place: 2 });
    // The fans' line is in its pre-queue: an earlier lane's code joins it, a spent one does not.
    expect(await join(sale, "cat", "fans", spare)).toEqual({ outcome: "JOINED", place: 1 });
    expect((await join(sale, "dan", "fans", spentFan)).outcome).toBe("ACCESS_CODE_USED");
    // Each line keeps its own places and counters; the public line has none and is not open.
    expect(await redisOf().hget(waitingRoomKeys(sale, "members").counters, "lined")).toBe("2");
    expect(await redisOf().hget(waitingRoomKeys(sale, "fans").counters, "lined")).toBe("1");
    expect(await redisOf().exists(waitingRoomKeys(sale).counters)).toBe(0);
    expect(await join(sale, "eve", PUBLIC_LINE)).toEqual({ outcome: "NOT_OPEN", place: 0 });
    expect(await join(sale, "eve", "nobody", b)).toEqual({ outcome: "NOT_FOUND", place: 0 });
  });

  it("refuses revoked and expired codes, opens no line before its time, and closes a lane's line at the next lane's start", async () => {
    const sale = await newSale({
      lanes: [
        { name: "members", startsIn: -1_000 },
        { name: "fans", startsIn: 90_000 },
      ],
      publicIn: 300_000,
    });
    const [revoked] = await codes(sale, "members", 1, 1, "cb_revoked");
    const [expired] = await codes(sale, "members", 1, 1, "cb_expired", Date.now() - 1);
    const [good, late] = (await codes(sale, "members", 2)) as [string, string];
    await redisOf().hset(accessCodeKeys(sale).batches, { "cb_revoked:revoked": 1 });
    expect((await join(sale, "ann", "members", revoked)).outcome).toBe("ACCESS_CODE_INVALID");
    expect((await join(sale, "ann", "members", expired)).outcome).toBe("ACCESS_CODE_INVALID");
    // fans' line opens 60 s before its start, 30 s from now.
    expect((await join(sale, "ann", "fans", good)).outcome).toBe("NOT_OPEN");
    expect((await join(sale, "ann", "members", good)).outcome).toBe("JOINED");
    // fans' start has come: the members' line is closed, the fans' takes members' codes.
    await moveTo(
      sale,
      [
        ["members", -10_000],
        ["fans", -1],
      ],
      300_000,
    );
    expect((await join(sale, "bob", "members", late)).outcome).toBe("CLOSED");
    expect(await codeOf(sale, late)).toBe("cb_members|members|1|0|"); // nothing bound by a refused join
    expect(await join(sale, "bob", "fans", late)).toEqual({ outcome: "JOINED", place: 1 });
  });

  it("draws a random sale's lane line with the line's own seed, derived from the sale's", async () => {
    const sale = await newSale({ mode: "random", lanes: [{ name: "vip", startsIn: 30_000 }], publicIn: 120_000 });
    const users = Array.from({ length: 12 }, (_, i) => `vip-${i}`);
    const hashes = await codes(sale, "vip", users.length);
    for (const [i, user] of users.entries())
      expect(await join(sale, user, "vip", hashes[i])).toEqual({ outcome: "JOINED", place: 0 });
    await moveTo(sale, [["vip", -1]], 120_000);
    const order = await drawOrder(await lineSeed(SEED, "vip"), users);
    expect(order).not.toEqual(await drawOrder(SEED, users)); // not the public line's order
    for (const [i, user] of order.entries()) expect((await join(sale, user, "vip")).place).toBe(i + 1);
  });
});

describe("a lane's own line: waiting-room-progress.lua", () => {
  it("admits from the lane's start at the sale's pace, no more passes than the lane may sell, and stops at the next lane's start", async () => {
    const sale = await newSale({
      stock: 10,
      lanes: [
        { name: "members", startsIn: 20_000, stock: 2 },
        { name: "fans", startsIn: 40_000 },
      ],
      publicIn: 120_000,
    });
    const hashes = await codes(sale, "members", 5);
    const users = ["m0", "m1", "m2", "m3", "m4"];
    for (const [i, user] of users.entries()) await join(sale, user, "members", hashes[i]);
    // The pre-queue: nobody admitted before the lane's start.
    expect(await progress(sale, "members")).toMatchObject({ admitted: 0, joined: 5, remaining: 2 });
    await moveTo(
      sale,
      [
        ["members", -1],
        ["fans", 40_000],
      ],
      120_000,
    );
    const now = await progress(sale, "members");
    // Two passes alive at most: the lane's allotment, not the sale's ten units.
    expect(now).toMatchObject({ admitted: 2, joined: 5, remaining: 2, state: "active" });
    expect(now.endsAt - now.startsAt).toBe(40_001);
    expect(String(await passOf(sale, "members", "m1"))).toMatch(/^2:\d+$/);
    expect(await passOf(sale, "members", "m2")).toBeNull();
    // Nothing of it reaches the public line's keys.
    expect(await redisOf().hget<string>(buyerKeys(sale, "m0", SPLIT).passes, "m0")).toBeNull();
    expect((await progress(sale, PUBLIC_LINE)).admitted).toBe(0);
    // The next lane's start closes it: no more places let in, whatever is left.
    await moveTo(
      sale,
      [
        ["members", -20_000],
        ["fans", -1],
      ],
      120_000,
    );
    await redisOf().hset(saleKeys(sale).meta, { "la:members": "4" });
    expect((await progress(sale, "members")).admitted).toBe(2);
    expect((await progress(sale, "nobody")).state).toBe("missing");
  });

  it("counts a lane pass unused after its grace a no-show and lets the lane's next place in, never past what the lane may sell", async () => {
    const sale = await newSale({
      stock: 10,
      lanes: [
        { name: "members", startsIn: -1_000, stock: 2 },
        { name: "fans", startsIn: 60_000 },
      ],
      publicIn: 120_000,
    });
    const users = ["n0", "n1", "n2", "n3", "n4"];
    const hashes = await codes(sale, "members", users.length);
    const code = (user: string) => hashes[users.indexOf(user)] as string;
    for (const user of users) await join(sale, user, "members", code(user));
    const graceMs = 1_000;
    expect(await progress(sale, "members", graceMs)).toMatchObject({ admitted: 2, fresh: 2, noShows: 0, remaining: 2 });
    // Neither n0 nor n1 buys within the grace: both are no-shows, and n2 and n3 are let in, in the lane's line.
    const after = await eventually("n0's and n1's grace to pass", async () => {
      const p = await progress(sale, "members", graceMs);
      return p.noShows === 2 && p;
    });
    expect(after).toMatchObject({ admitted: 4, fresh: 2, remaining: 2 });
    expect((await progress(sale, PUBLIC_LINE, graceMs)).admitted).toBe(0);
    // n0 comes back with a pass still valid and buys; n2 buys; the lane's allotment is spent, so n3 is refused.
    expect((await checkout(sale, "members", ["n0", "1@members", code("n0")])).code).toBe("OK");
    expect((await checkout(sale, "members", ["n2", "3@members", code("n2")])).code).toBe("OK");
    expect((await checkout(sale, "members", ["n3", "4@members", code("n3")])).code).not.toBe("OK");
    expect(await redisOf().hget(saleKeys(sale).meta, "ls:members")).toBe("2");
    expect(await redisOf().hget(saleKeys(sale).meta, "remaining")).toBe("8");
    // The lane sold what it may: nobody more is let into its line, whatever the no-shows.
    await eventually("n3's grace to pass", async () => (await progress(sale, "members", graceMs)).noShows === 3);
    expect(await progress(sale, "members", graceMs)).toMatchObject({ admitted: 4, remaining: 0 });
  });
});

describe("checkout.lua with lanes' own lines", () => {
  it("sells in a lane's window only against a pass of that lane's line, spent with the unit and the code in one call", async () => {
    const sale = await newSale({
      stock: 6,
      lanes: [
        { name: "members", startsIn: -1_000, stock: 3 },
        { name: "fans", startsIn: 60_000 },
      ],
      publicIn: 120_000,
    });
    const users = ["ann", "bob", "cat", "dan", "eve"];
    const hashes = await codes(sale, "members", users.length, 2);
    const code = (user: string) => hashes[users.indexOf(user)] as string;
    for (const user of users) await join(sale, user, "members", code(user));
    expect((await progress(sale, "members")).admitted).toBe(3);
    // A staff pass is the public line's (place 0): no good in a lane's window.
    const staff = buyerKeys(sale, "eve", SPLIT);
    await redisOf().hset(staff.passes, { eve: `0:${Date.now() + 60_000}` });

    expect(await checkout(sale, "members", ["ann", "1@members"])).toEqual({
      code: "ACCESS_CODE_REQUIRED",
      publicStartsAt: expect.any(Number),
    });
    expect(await checkout(sale, "members", ["ann", "", code("ann")])).toEqual({ code: "QUEUE_PASS_REQUIRED" });
    expect(await checkout(sale, "members", ["ann", "2@members", code("ann")])).toEqual({ code: "QUEUE_PASS_INVALID" }); // bob's place
    expect(await checkout(sale, "members", ["eve", "0", code("eve")])).toEqual({ code: "QUEUE_PASS_INVALID" });
    expect(await checkout(sale, "members", ["ann", "1", code("ann")])).toEqual({ code: "QUEUE_PASS_INVALID" }); // not claimed as the lane's
    expect(await checkout(sale, "fans", ["ann", "1@fans", code("ann")])).toEqual({ code: "QUEUE_PASS_INVALID" }); // not open
    expect(await redisOf().hget(saleKeys(sale).meta, "remaining")).toBe("6"); // nothing reserved

    // One merged call: ann's and bob's passes buy, with their codes; cat's without a pass does not.
    const replies = await checkoutAll(sale, "members", [
      ["ann", "1@members", code("ann")],
      ["bob", "2@members", code("bob")],
      ["cat", "", code("cat")],
    ]);
    expect(replies.map((r) => r.code)).toEqual(["OK", "OK", "QUEUE_PASS_REQUIRED"]);
    expect(replies[0]).toMatchObject({ lane: "members" });
    expect(await passOf(sale, "members", "ann")).toBe("1:used");
    expect(await redisOf().zscore(lineKeysOf(sale, "members", "ann", SPLIT).live, "ann")).toBeNull();
    expect(await redisOf().hget(waitingRoomKeys(sale, "members").counters, "used")).toBe("2");
    expect(await codeOf(sale, code("ann"))).toBe("cb_members|members|1|0|ann");
    // The pass bought once; the code has a use left, the pass none.
    expect(await checkout(sale, "members", ["ann", "1@members", code("ann")])).toEqual({ code: "QUEUE_PASS_USED" });
    expect((await checkout(sale, "members", ["cat", "3@members", code("cat")])).code).toBe("OK");
    // Three sold: the lane's allotment. The line admits nobody more into it.
    expect(await progress(sale, "members")).toMatchObject({ admitted: 3, used: 3, remaining: 0 });

    // The public start: a lane's pass buys nothing, the public line's does, and no code is asked for.
    await moveTo(
      sale,
      [
        ["members", -60_000],
        ["fans", -30_000],
      ],
      -1,
    );
    await join(sale, "dan", "members", code("dan")); // holds its place; the line is closed to buying
    expect(await checkout(sale, "members", ["dan", "4@members", code("dan")])).toEqual({ code: "QUEUE_PASS_INVALID" });
    expect((await checkout(sale, PUBLIC_LINE, ["eve", "0"])).code).toBe("OK");

    // Invariants: units within stock and the lane's allotment, one order per buyer, uses within each code's.
    expect(await redisOf().hget(saleKeys(sale).meta, "remaining")).toBe("2");
    expect(await redisOf().hget(saleKeys(sale).meta, "ls:members")).toBe("3");
    for (const user of users) {
      const held = await redisOf().hget<string>(buyerKeys(sale, user, SPLIT).buyers, user);
      expect(Number(String(held ?? "0:").split(":")[0])).toBeLessThanOrEqual(1);
    }
    const uses = await Promise.all(users.map(async (u) => Number((await codeOf(sale, code(u))).split("|")[2])));
    expect(uses.every((left) => left >= 0 && left <= 2)).toBe(true);
    expect(uses.reduce((n, left) => n + (2 - left), 0)).toBe(3);
  });
});
