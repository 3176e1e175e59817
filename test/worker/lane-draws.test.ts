import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { verifyDraw } from "../../dev/lib/verify-draw";
import type { DrawLeaf, MyEntry } from "../../src/shared/api-types";
import { saleKeys } from "../../src/shared/keys";
import { api, BASE, d1LaneOrders, eventually, internalId, redis, userToken } from "./helpers";

// Presale lanes in a sale sold by draw, in workerd with local D1, the queues and the real
// Redis: members and fans enter with their codes (one shared between two accounts, one not a
// code at all), the public without; each lane is drawn apart from its allotment before the
// public draw, which `verify-draw` checks from public data alone; each lane's winners get their
// orders from the lane's start with their code spent then, the public's from the sale's start;
// a unit a member gives back goes down the members' waitlist; and the invariants per lane, per
// variant and per code hold.

const SIZES = [
  { id: "s", label: "S", stock: 4 },
  { id: "m", label: "M", stock: 3 },
];
const stockOf = new Map(SIZES.map((v) => [v.id, v.stock]));
const iso = (ms: number) => new Date(ms).toISOString();

interface Entrant {
  userId: string;
  token: string;
  lane: string;
}

describe("lanes with a draw", () => {
  it("draws each lane from its allotment before the public draw, offers each lane's winners from its start with their code, and checks out from public data", async () => {
    const closesAt = Date.now() + 4_000;
    const starts = { members: closesAt + 1_500, fans: closesAt + 6_000, public: closesAt + 10_000 };
    const sale = await api.createSale({
      name: "lane draws",
      variants: SIZES,
      perUserLimit: 1,
      paymentWindowSec: 600,
      startsAt: iso(starts.public),
      endsAt: iso(starts.public + 3_600_000),
      draw: { opensAt: iso(Date.now() - 1_000), closesAt: iso(closesAt) },
      lanes: [
        { name: "members", startsAt: iso(starts.members), stock: 2, variants: { s: 2 } },
        { name: "fans", startsAt: iso(starts.fans), stock: 2 },
      ],
    });
    const batch = async (lane: string, count: number) =>
      (await api.codeBatch(sale.id, lane, { count, uses: 1 })).body?.codes ?? [];
    const [members, fans] = await Promise.all([batch("members", 6), batch("fans", 5)]);

    const entrants: Entrant[] = [];
    const enter = async (userId: string, lane: string, variant: string, code?: string) => {
      const token = await userToken(userId);
      const answer = await api.enterDraw(sale.id, token, { variant }, code === undefined ? {} : { "Access-Code": code });
      if (answer.status === 201) entrants.push({ userId, token, lane });
      return answer;
    };
    const size = (i: number) => (i % 2 === 0 ? "s" : "m");
    await Promise.all([
      ...members.slice(0, 5).map((code, i) => enter(`m-${sale.id}-${i}`, "members", "s", code)),
      ...fans.map((code, i) => enter(`f-${sale.id}-${i}`, "fans", size(i), code)),
      ...Array.from({ length: 8 }, (_, i) => enter(`p-${sale.id}-${i}`, "", size(i))),
    ]);
    expect(entrants).toHaveLength(18);

    // A code is bound to the first account that enters with it; another account is refused and enters nothing.
    const shared = members[5] as string;
    const first = await enter(`m-shared-a-${sale.id}`, "members", "s", shared);
    expect(first.status).toBe(201);
    expect(first.body?.entry.lane).toBe("members");
    const second = await enter(`m-shared-b-${sale.id}`, "members", "s", shared);
    expect(second.status).toBe(403);
    expect(second.code).toBe("ACCESS_CODE_INVALID");
    expect((await api.myEntry(sale.id, await userToken(`m-shared-b-${sale.id}`))).status).toBe(404);
    const garbage = await enter(`g-${sale.id}`, "", "s", "not a code");
    expect(garbage.status).toBe(403);
    expect(garbage.code).toBe("ACCESS_CODE_INVALID");
    // A change keeps the entry's lane, code or not.
    const member = entrants[0] as Entrant;
    const changed = await api.enterDraw(sale.id, member.token, { variant: "s" });
    expect(changed.status).toBe(200);
    expect(changed.body?.entry.lane).toBe("members");
    const standing = entrants.length;
    expect(standing).toBe(19);
    const codes = (await api.codeBatches(sale.id)).batches;
    expect(codes.find((b) => b.lane === "members")).toMatchObject({ bound: 6, spent: 0 });
    expect(codes.find((b) => b.lane === "fans")).toMatchObject({ bound: 5, spent: 0 });

    // The close, the draw, and the check from public data alone.
    await eventually("the entries to close", async () => Date.now() > closesAt + 200);
    expect((await api.runDraw(sale.id)).status).toBe(202);
    const drawn = await eventually("the draw", async () => {
      const view = (await api.draw(sale.id)).body;
      return view?.state === "drawn" ? view : undefined;
    });
    expect(drawn.entries).toBe(standing);
    expect(drawn.lanes.map((l) => [l.name, l.stock])).toEqual([
      ["members", 2],
      ["fans", 2],
    ]);
    const publicFetch: typeof fetch = (input, init) => SELF.fetch(String(input instanceof Request ? input.url : input), init);
    const verdict = await verifyDraw(BASE, sale.id, publicFetch);
    expect(verdict.problems).toEqual([]);
    expect(verdict.ok).toBe(true);

    // Each lane's draw within its allotment (and what the lane before left), every draw within stock.
    const leaves: DrawLeaf[] = (await api.drawEntries(sale.id)).body?.leaves ?? [];
    expect(leaves).toHaveLength(standing);
    const selected = (lane: string, variant?: string) =>
      leaves
        .filter((l) => l.lane === lane && l.result === "selected" && (variant === undefined || l.variant === variant))
        .reduce((n, l) => n + l.quantity, 0);
    expect(leaves.filter((l) => l.lane === "members")).toHaveLength(6);
    expect(selected("members")).toBe(2); // six members asked for S, the lane has two of them
    expect(selected("members") + selected("fans")).toBeLessThanOrEqual(4);
    for (const [variant, stock] of stockOf)
      expect(selected("members", variant) + selected("fans", variant) + selected("", variant)).toBeLessThanOrEqual(stock);
    expect(leaves.filter((l) => l.lane === "members" && l.result === "waitlisted").length).toBeGreaterThan(0);

    // Members' winners get their orders from the members' start; nobody else's draw before its own start.
    const entriesNow = async () =>
      Promise.all(entrants.map(async (e) => ({ e, m: (await api.myEntry(sale.id, e.token)).body as MyEntry })));
    const membersWon = await eventually("the members' winners' orders", async () => {
      const read = Date.now();
      const all = await entriesNow();
      const won = all.filter((x) => x.e.lane === "members" && x.m.status === "selected");
      if (!won.every((x) => x.m.orderId)) return undefined;
      if (Date.now() < starts.fans) {
        expect(read).toBeGreaterThanOrEqual(starts.members - 1_000);
        expect(all.filter((x) => x.e.lane !== "members" && x.m.orderId)).toEqual([]);
      }
      return won;
    });
    expect(membersWon).toHaveLength(2);
    for (const x of membersWon) expect(x.m.lane).toBe("members");

    // One member gives theirs back: the unit goes to the members' waitlist first.
    const giver = membersWon[0] as (typeof membersWon)[number];
    await eventually(
      "the giver's order to await payment",
      async () => (await api.order(giver.m.orderId as string, giver.e.token)).body?.status === "awaiting_payment",
    );
    expect((await api.cancel(giver.m.orderId as string, giver.e.token)).status).toBe(200);
    const waitlisted = new Set(leaves.filter((l) => l.lane === "members" && l.result === "waitlisted").map((l) => l.leafHash));
    await eventually(
      "a waitlisted member to be offered the unit",
      async () => (await entriesNow()).some((x) => waitlisted.has(x.m.proof?.leafHash ?? "") && x.m.orderId),
      30_000,
    );

    // From the public start every winner has an order.
    await eventually(
      "every winner's order",
      async () => (await entriesNow()).every((x) => x.m.status !== "selected" || x.m.orderId),
      30_000,
    );
    const final = await entriesNow();
    const offered = final.filter((x) => x.m.orderId);

    // Invariants, in D1 once every offer settled: one order per account, within stock per size,
    // each lane's orders within its allotment (members', then members' and fans' together),
    // each code on one account's orders within its one use, and Redis agreeing.
    const rows = await eventually("every offer to settle", async () => {
      const read = await d1LaneOrders(sale.id);
      return read.length === offered.length ? read : undefined; // the given-back one among them, cancelled
    });
    expect(new Set(rows.map((r) => r.user_id)).size).toBe(rows.length);
    for (const x of offered) expect(rows.some((r) => r.order_id === internalId(x.m.orderId as string))).toBe(true);
    const holding = rows.filter((r) => r.status !== "cancelled");
    const units = (of: typeof rows) => of.reduce((n, r) => n + r.quantity, 0);
    for (const [variant, stock] of stockOf)
      expect(units(holding.filter((r) => r.variant === variant))).toBeLessThanOrEqual(stock);
    const inLane = (lane: string) => holding.filter((r) => r.lane === lane);
    expect(units(inLane("members"))).toBeLessThanOrEqual(2);
    expect(units(inLane("members")) + units(inLane("fans"))).toBeLessThanOrEqual(4);
    const laneOf = new Map(entrants.map((e) => [e.userId, e.lane]));
    for (const r of rows) {
      // A public entry buys only from the public start, so without a lane or a code.
      if (laneOf.get(r.user_id) === "") expect([r.lane, r.access_code]).toEqual([null, null]);
    }
    const byCode = new Map<string, typeof rows>();
    for (const r of holding.filter((x) => x.access_code !== null))
      byCode.set(r.access_code as string, [...(byCode.get(r.access_code as string) ?? []), r]);
    for (const orders of byCode.values()) expect(orders).toHaveLength(1);
    const meta = await redis.hmget(saleKeys(sale.id).meta, "remaining", "v:s", "v:m");
    expect(Number(meta?.[0])).toBe(7 - units(holding));
    expect(Number(meta?.[1])).toBe(4 - units(holding.filter((r) => r.variant === "s")));
    expect(Number(meta?.[2])).toBe(3 - units(holding.filter((r) => r.variant === "m")));
    const after = (await api.codeBatches(sale.id)).batches;
    const spent = after.reduce((n, b) => n + b.spent, 0);
    expect(spent).toBe(holding.filter((r) => r.access_code !== null).length);
  }, 90_000);
});
