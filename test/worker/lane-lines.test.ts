// Presale lanes of a sale with a waiting room (docs/lanes.md, "Lanes with a waiting room"), through
// the API in workerd with local D1 and the real Redis behind the gateway: each lane's own line,
// joined with a code bound at the join, admitting from the lane's start; its passes buy with the
// code in the lane's window only, and the public line works as before from the public start.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { QueuePosition } from "../../src/shared/api-types";
import { waitingRoomKeys } from "../../src/shared/keys";
import { api, eventually, redis, userToken } from "./helpers";

const iso = (ms: number) => new Date(ms).toISOString();
const sleepUntil = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms - Date.now())));
/** The claims a ticket or pass carries (readable by its holder; the signature is the Worker's). */
const claimsOf = (token: string) =>
  JSON.parse(atob((token.split(".")[1] as string).replaceAll("-", "+").replaceAll("_", "/"))) as Record<string, unknown>;

interface Buyer {
  userId: string;
  token: string;
  ticket: string;
}

async function buyer(saleId: string, name: string): Promise<Omit<Buyer, "ticket">> {
  const userId = `line-${saleId}-${name}`;
  return { userId, token: await userToken(userId) };
}

/** Joins (with `code` when given); throws unless joined. */
async function join(saleId: string, who: Omit<Buyer, "ticket">, code?: string): Promise<Buyer & { place: number | null }> {
  const joined = await api.joinWaitingRoom(saleId, who.token, code);
  if (!joined.body) throw new Error(`${who.userId} could not join: ${joined.status} ${joined.code}`);
  return { ...who, ticket: joined.body.ticket, place: joined.body.place };
}

/** Polls as a page would until the buyer is admitted or told no pass will come. */
function waitForTurn(saleId: string, who: Buyer): Promise<QueuePosition> {
  return eventually(
    `${who.userId}'s turn`,
    async () => {
      await new Promise((r) => setTimeout(r, 250));
      const res = await api.pollQueue(saleId, who.token, who.ticket);
      return res.body !== undefined && res.body.state !== "waiting" && res.body;
    },
    30_000,
  );
}

/** D1's orders of the sale. */
async function orders(saleId: string) {
  const { results } = await env.DB.prepare("SELECT user_id, quantity, lane, access_code FROM orders WHERE sale_id = ?")
    .bind(Number(saleId))
    .all<{ user_id: string; quantity: number; lane: string | null; access_code: string | null }>();
  return results;
}

describe("a lane with its own waiting room", () => {
  it("lets code holders join the lane's line with their code, admits them at the lane's start, and sells to its passes with the code; the public line works as before", async () => {
    const now = Date.now();
    // members' line opens a second ago (6 s before its start); the public line 6 s before the public start.
    const laneStart = now + 5_000;
    const publicStart = now + 12_000;
    const sale = await api.createSale({
      stock: 5,
      startsAt: iso(publicStart),
      endsAt: iso(now + 3_600_000),
      queue: { mode: "fifo", prequeueSec: 6, admitPerSec: 10, passTtlSec: 60 },
      lanes: [{ name: "members", startsAt: iso(laneStart), stock: 3 }],
    });
    const batch = await api.codeBatch(sale.id, "members", { count: 5 });
    const [a, b, c, spare, staffCode] = (batch.body?.codes ?? []) as [string, string, string, string, string];
    const [ann, bob, cat, dan, eve, fay, gus, staff] = await Promise.all(
      ["ann", "bob", "cat", "dan", "eve", "fay", "gus", "staff"].map((name) => buyer(sale.id, name)),
    );
    if (!ann || !bob || !cat || !dan || !eve || !fay || !gus || !staff) throw new Error("buyers missing");

    // The lane's pre-queue: only code holders join, each code bound to its joiner there.
    expect((await api.joinWaitingRoom(sale.id, dan.token)).code).toBe("ACCESS_CODE_REQUIRED");
    expect((await api.joinWaitingRoom(sale.id, eve.token, "NOT-A-CODE")).code).toBe("ACCESS_CODE_INVALID");
    const annIn = await join(sale.id, ann, a);
    expect(annIn.place).toBe(1);
    expect(claimsOf(annIn.ticket)).toMatchObject({ p: 1, l: "members" });
    expect((await api.joinWaitingRoom(sale.id, bob.token, a)).code).toBe("ACCESS_CODE_INVALID"); // ann's
    const bobIn = await join(sale.id, bob, b);
    const catIn = await join(sale.id, cat, c);
    expect([bobIn.place, catIn.place]).toEqual([2, 3]);
    expect((await join(sale.id, ann, a)).place).toBe(1); // again: the same place
    const counted = await api.codeBatches(sale.id);
    expect(counted.batches[0]).toMatchObject({ bound: 3, spent: 0 }); // bound at the join, nothing spent
    expect(await redis.exists(waitingRoomKeys(sale.id).counters)).toBe(0); // the public line untouched
    // The console reads each line: the lane's by name, the public one without.
    const places = await api.queuePlaces(sale.id, 1, "members");
    expect(places.places.map((p) => p.userId)).toEqual([ann.userId, bob.userId, cat.userId]);
    expect(await api.queueStats(sale.id, "members")).toMatchObject({ joined: 3, admitted: 0, remaining: 3 });
    expect((await api.queueStats(sale.id)).joined).toBe(0);
    await expect(api.queuePlaces(sale.id, 1, "nobody")).rejects.toMatchObject({ code: "LANE_NOT_FOUND" });

    // The lane's start: its line admits, at most its allotment's three.
    const turns = await Promise.all([annIn, bobIn, catIn].map((who) => waitForTurn(sale.id, who)));
    expect(turns.map((t) => t.state)).toEqual(["admitted", "admitted", "admitted"]);
    for (const turn of turns) {
      expect(claimsOf(turn.pass as string)).toMatchObject({ l: "members" });
      expect(Date.parse(turn.passExpiresAt as string) - 60_000).toBeGreaterThanOrEqual(laneStart - 1_000);
    }
    const [annPass, bobPass, catPass] = turns.map((t) => t.pass as string) as [string, string, string];

    // A staff pass is the public line's: it buys nothing in the lane's window, code or not.
    const minted = await api.bypass(sale.id, staff.userId);
    const staffPass = minted.body?.pass as string;
    expect((await api.checkoutWithPass(sale.id, staff.token, staffPass, staffCode)).code).toBe("QUEUE_PASS_INVALID");
    // The lane's pass buys with the code, in one call: neither alone.
    expect((await api.checkoutWithPass(sale.id, ann.token, annPass)).code).toBe("ACCESS_CODE_REQUIRED");
    expect((await api.checkoutWithPass(sale.id, ann.token, undefined, a)).code).toBe("QUEUE_PASS_REQUIRED");
    expect((await api.checkoutWithPass(sale.id, ann.token, bobPass, a)).code).toBe("QUEUE_PASS_INVALID"); // bob's
    expect((await api.checkoutWithPass(sale.id, ann.token, annPass, a)).status).toBe(202);
    expect((await api.checkoutWithPass(sale.id, ann.token, annPass, a)).code).toMatch(/^(ACCESS_CODE_USED|ALREADY_PURCHASED)$/);
    expect((await api.checkoutWithPass(sale.id, bob.token, bobPass, b)).status).toBe(202);
    const spent = await api.codeBatches(sale.id);
    expect(spent.batches[0]).toMatchObject({ bound: 3, spent: 2 });

    // The public line opened 6 s before the public start: without a code, a join goes there as it always did.
    await sleepUntil(publicStart - 6_000 + 200);
    const fayIn = await join(sale.id, fay);
    const gusIn = await join(sale.id, gus);
    expect([fayIn.place, gusIn.place]).toEqual([1, 2]);
    expect(claimsOf(fayIn.ticket).l).toBeUndefined();
    expect((await join(sale.id, dan, spare)).place).toBe(4); // a code still joins the lane's line meanwhile

    // The public start: a lane's pass buys nothing; the public line's passes buy without a code.
    await sleepUntil(publicStart + 200);
    expect((await api.checkoutWithPass(sale.id, cat.token, catPass, c)).code).toBe("QUEUE_PASS_INVALID");
    const [fayTurn, gusTurn] = await Promise.all([waitForTurn(sale.id, fayIn), waitForTurn(sale.id, gusIn)]);
    expect((await api.checkoutWithPass(sale.id, fay.token, fayTurn.pass as string)).status).toBe(202);
    expect((await api.checkoutWithPass(sale.id, gus.token, gusTurn.pass as string)).status).toBe(202);
    expect((await api.checkoutWithPass(sale.id, staff.token, staffPass)).status).toBe(202);
    expect((await api.sale(sale.id)).remaining).toBe(0);

    // Invariants: units within the stock and the lane's allotment, one order per buyer, uses within the codes'.
    await eventually("every order to settle", async () => (await orders(sale.id)).length === 5);
    const settled = await orders(sale.id);
    expect(settled.reduce((n, o) => n + o.quantity, 0)).toBeLessThanOrEqual(5);
    const inLane = settled.filter((o) => o.lane === "members");
    expect(inLane.map((o) => o.user_id).sort()).toEqual([ann.userId, bob.userId].sort());
    expect(inLane.reduce((n, o) => n + o.quantity, 0)).toBeLessThanOrEqual(3);
    expect(new Set(settled.map((o) => o.user_id)).size).toBe(settled.length);
    const codesUsed = (await api.codeBatches(sale.id)).batches[0];
    expect(codesUsed?.spent).toBe(inLane.length);
    expect(codesUsed?.spent).toBeLessThanOrEqual((codesUsed?.count ?? 0) * (codesUsed?.uses ?? 0));
    expect(new Set(inLane.map((o) => o.access_code)).size).toBe(inLane.length); // one use each: a code per order
  }, 60_000);

  it("keeps a queued sale's lanes and waiting room as they are once its first lane's line opens", async () => {
    const now = Date.now();
    const queue = { mode: "random" as const, prequeueSec: 120, admitPerSec: 10, passTtlSec: 60 };
    const laned = (laneIn: number) =>
      api.createSale({
        startsAt: iso(now + 3_600_000),
        endsAt: iso(now + 7_200_000),
        queue,
        lanes: [{ name: "members", startsAt: iso(now + laneIn) }],
      });
    // Its line opened a minute ago, an hour before the public line opens.
    const open = await laned(60_000);
    expect((await api.editSale(open.id, { lanes: [{ name: "vip", startsAt: iso(now + 60_000) }] })).code).toBe("QUEUE_OPEN");
    expect((await api.editSale(open.id, { queue: { admitPerSec: 20 } })).code).toBe("QUEUE_OPEN");
    // Not open yet: both change.
    const later = await laned(1_800_000);
    const edited = await api.editSale(later.id, {
      lanes: [{ name: "vip", startsAt: iso(now + 1_800_000) }],
      queue: { admitPerSec: 20 },
    });
    expect(edited.status).toBe(200);
    expect(edited.body?.lanes.map((l) => l.name)).toEqual(["vip"]);
  });
});
