import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { Answer } from "../../dev/lib/api-client";
import { accessCodeKeys, saleKeys } from "../../src/shared/keys";
import { api, d1LaneOrders, eventually, internalId, redis } from "./helpers";

// A crowd over three presale lanes and the public start, in workerd with local D1, the queues
// and the real Redis: members, fans and friends racing with their codes at each lane's start,
// codes shared between accounts, a code of three uses raced by ten requests, returns, and the
// invariants per lane and per variant (units within each allotment and what rolled over, uses
// within each code's, sold within stock, every accepted order settled once).

const SIZES = [
  { id: "s", label: "S", stock: 12 },
  { id: "m", label: "M", stock: 12 },
];
const LANES = [
  { name: "members", offsetMs: -1_000, stock: 3, variants: { s: 2, m: 2 } },
  { name: "fans", offsetMs: 2_500, stock: 3 },
  { name: "friends", offsetMs: 5_000 },
] as const;
const PUBLIC_MS = 7_500;

const iso = (ms: number) => new Date(ms).toISOString();
const sleepUntil = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms - Date.now())));

interface Bought {
  userId: string;
  orderId: string;
  variant: string;
  quantity: number;
  code: string | undefined;
}

describe("a crowd over three lanes", () => {
  it("sells each lane within its allotment and what rolled over, each code within its uses, and settles every order once", async () => {
    const t0 = Date.now();
    const sale = await api.createSale({
      name: "lanes crowd",
      variants: SIZES,
      perUserLimit: 3,
      paymentWindowSec: 600,
      startsAt: iso(t0 + PUBLIC_MS),
      endsAt: iso(t0 + 3_600_000),
      lanes: LANES.map((l) => ({
        name: l.name,
        startsAt: iso(t0 + l.offsetMs),
        ...("stock" in l && { stock: l.stock }),
        ...("variants" in l && { variants: l.variants }),
      })),
    });
    const batch = async (lane: string, count: number, uses: number) =>
      (await api.codeBatch(sale.id, lane, { count, uses })).body?.codes ?? [];
    const [members, fans, friends, triple] = await Promise.all([
      batch("members", 8, 1),
      batch("fans", 8, 1),
      batch("friends", 8, 1),
      batch("friends", 1, 3),
    ]);
    const bought: Bought[] = [];
    const answers: Answer[] = [];
    const buy = async (userId: string, code: string | undefined, variant: string, quantity = 1) => {
      const token = await api.userToken(userId);
      const answer =
        code === undefined
          ? await api.checkout(sale.id, token, quantity, variant)
          : await api.checkoutWithCode(sale.id, token, code, quantity, variant);
      answers.push(answer);
      if (answer.status === 202) bought.push({ userId, orderId: answer.orderId as string, variant, quantity, code });
      return answer;
    };
    const size = (i: number) => (i % 2 === 0 ? "s" : "m");

    // Members' window: two accounts racing one code, then seven holders at once (a code each).
    const sharedCode = members[7] as string;
    const shared = await Promise.all([
      buy(`m-shared-a-${sale.id}`, sharedCode, "s"),
      buy(`m-shared-b-${sale.id}`, sharedCode, "s"),
    ]);
    expect(shared.map((a) => a.code).sort()).toEqual(["ACCEPTED", "ACCESS_CODE_INVALID"].sort());
    await Promise.all(members.slice(0, 7).map((code, i) => buy(`m-${sale.id}-${i}`, code, size(i))));
    const membersSold = bought.reduce((n, b) => n + b.quantity, 0);
    expect(membersSold).toBe(3); // the lane's allotment, whoever got it

    // A members' order comes back before the fans' start: its unit returns to the lane.
    const back = bought[0] as Bought;
    expect((await api.cancel(back.orderId, await api.userToken(back.userId))).status).toBe(200);
    await eventually(
      "the returned unit to reach the lane",
      async () => Number(await redis.hget(saleKeys(sale.id).meta, "ls:members")) === 2,
    );

    // Fans' window: the members' unsold unit rolls over; fans and members' codes buy 3 + 1.
    await sleepUntil(t0 + LANES[1].offsetMs + 200);
    await Promise.all(fans.map((code, i) => buy(`f-${sale.id}-${i}`, code, size(i))));
    await Promise.all(members.slice(0, 2).map((code, i) => buy(`m-late-${sale.id}-${i}`, code, "s"))); // bound to others: refused
    const fansSold = bought.filter((b) => b.userId.startsWith("f-")).reduce((n, b) => n + b.quantity, 0);
    expect(fansSold).toBe(4);

    // Friends' window: no allotment of its own, so it sells from what is left. One holder races
    // ten requests on a code of three uses: three units, whatever the order they land in.
    await sleepUntil(t0 + LANES[2].offsetMs + 200);
    const racer = `fr-racer-${sale.id}`;
    const raced = await Promise.all(Array.from({ length: 10 }, () => buy(racer, triple[0] as string, "m")));
    expect(raced.filter((a) => a.status === 202)).toHaveLength(3);
    expect(raced.every((a) => ["ACCEPTED", "ACCESS_CODE_USED", "ALREADY_PURCHASED"].includes(a.code))).toBe(true);
    await Promise.all(friends.map((code, i) => buy(`fr-${sale.id}-${i}`, code, size(i), 1 + (i % 2))));
    expect(bought.filter((b) => b.userId.startsWith("fr-")).length).toBeGreaterThan(0);

    // The public start: anyone buys, without a code.
    await sleepUntil(t0 + PUBLIC_MS + 200);
    await Promise.all(Array.from({ length: 6 }, (_, i) => buy(`p-${sale.id}-${i}`, undefined, size(i))));

    // Invariants. Every accepted order settles once; sold within stock, per size too.
    const internal = new Map(bought.map((b) => [internalId(b.orderId), b]));
    await eventually("every accepted order to settle", async () => {
      const n = await env.DB.prepare("SELECT COUNT(*) AS n FROM orders WHERE sale_id = ?")
        .bind(Number(sale.id))
        .first<number>("n");
      return n === bought.length;
    });
    const rows = await d1LaneOrders(sale.id);
    expect(new Set(rows.map((r) => r.order_id))).toEqual(new Set(internal.keys()));
    const holding = rows.filter((r) => r.status !== "cancelled");
    const units = (of: typeof rows) => of.reduce((n, r) => n + r.quantity, 0);
    for (const v of SIZES) expect(units(holding.filter((r) => r.variant === v.id))).toBeLessThanOrEqual(v.stock);
    expect(units(holding)).toBeLessThanOrEqual(24);
    // Per lane: members within 3 (2 a size), members + fans within 6.
    const inLane = (lane: string) => holding.filter((r) => r.lane === lane);
    expect(units(inLane("members"))).toBeLessThanOrEqual(3);
    for (const v of ["s", "m"]) expect(units(inLane("members").filter((r) => r.variant === v))).toBeLessThanOrEqual(2);
    expect(units(inLane("members")) + units(inLane("fans"))).toBeLessThanOrEqual(6);
    // Orders bought before the public start carry their lane and code; those after, neither.
    for (const r of rows) {
      const b = internal.get(r.order_id) as Bought;
      if (b.userId.startsWith("p-")) expect(r.lane).toBeNull();
      else expect(r.lane).not.toBeNull();
    }
    // Per code: its orders within its uses, all one account's.
    const byCode = new Map<string, typeof rows>();
    for (const r of rows.filter((x) => x.access_code !== null))
      byCode.set(r.access_code as string, [...(byCode.get(r.access_code as string) ?? []), r]);
    for (const orders of byCode.values()) {
      expect(new Set(orders.map((o) => o.user_id)).size).toBe(1);
      const triples = orders.some((o) => o.user_id === racer);
      expect(orders.filter((o) => o.status !== "cancelled").length).toBeLessThanOrEqual(triples ? 3 : 1);
    }
    // Redis agrees: its remaining is the stock less what D1 holds, the batches' spent counts their uses.
    const meta = await redis.hmget(saleKeys(sale.id).meta, "remaining", "v:s", "v:m");
    expect(Number(meta?.[0])).toBe(24 - units(holding));
    expect(Number(meta?.[1])).toBe(12 - units(holding.filter((r) => r.variant === "s")));
    expect(Number(meta?.[2])).toBe(12 - units(holding.filter((r) => r.variant === "m")));
    const counters = (await redis.hgetall(accessCodeKeys(sale.id).batches)) as unknown as string[];
    const spent = counters.reduce((n, v, i) => (i % 2 === 0 && v.endsWith(":spent") ? n + Number(counters[i + 1]) : n), 0);
    expect(spent).toBe(holding.filter((r) => r.access_code !== null).length);
    expect(answers.every((a) => a.status < 500)).toBe(true);
  }, 60_000);
});
