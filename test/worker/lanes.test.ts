import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { accessCodeKeys, saleKeys } from "../../src/shared/keys";
import { api, eventually, fetchWithVars, freshAddress, redis } from "./helpers";

// Presale lanes through the API in workerd, with local D1 and the real Redis behind the
// gateway: codes made, checked, bound and spent with the units, allotments rolling over at
// each lane's start, returns, revocation, guessing, staff passes and a restore.

const iso = (ms: number) => new Date(ms).toISOString();
const sleepUntil = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms - Date.now())));
/** D1's lane and code of each order of the sale. */
async function laneOrders(saleId: string) {
  const { results } = await env.DB.prepare("SELECT user_id, lane, access_code, status FROM orders WHERE sale_id = ?")
    .bind(Number(saleId))
    .all<{ user_id: string; lane: string | null; access_code: string | null; status: string }>();
  return results;
}

/** A sale whose members' lane is open now, the fans' from `fansIn` ms, the public from `publicIn`. */
async function laneSale(fansIn: number, publicIn: number, extra: Record<string, unknown> = {}) {
  const now = Date.now();
  return api.createSale({
    stock: 10,
    startsAt: iso(now + publicIn),
    endsAt: iso(now + 3_600_000),
    lanes: [
      { name: "members", startsAt: iso(now - 1_000), stock: 3 },
      { name: "fans", startsAt: iso(now + fansIn), stock: 2 },
    ],
    ...extra,
  });
}

describe("presale lanes", () => {
  it("sell to code holders only, each code bound to its first buyer and spent with the unit, within the lane's allotment", async () => {
    const sale = await laneSale(60_000, 120_000, { perUserLimit: 2 });
    expect(sale.lanes).toEqual([
      { name: "members", startsAt: sale.lanes[0]?.startsAt, stock: 3, remaining: 3 },
      { name: "fans", startsAt: sale.lanes[1]?.startsAt, stock: 2, remaining: 5 },
    ]);
    const members = await api.codeBatch(sale.id, "members", { count: 5 });
    expect(members.status).toBe(201);
    const codes = members.body?.codes ?? [];
    expect(codes).toHaveLength(5);
    for (const code of codes) expect(code).toMatch(/^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/);
    const fans = await api.codeBatch(sale.id, "fans", { count: 2, uses: 2 });
    const fanCode = fans.body?.codes[0] as string;
    // Only hashes are kept: no code is anywhere in D1 or Redis.
    const stored = JSON.stringify(
      await env.DB.prepare("SELECT * FROM access_codes WHERE sale_id = ?").bind(Number(sale.id)).all(),
    );
    for (const code of codes) expect(stored).not.toContain(code.replaceAll("-", ""));

    const [ann, bob, cat, dan, eve] = await Promise.all(
      ["ann", "bob", "cat", "dan", "eve"].map((u) => api.userToken(`lane-${sale.id}-${u}`)),
    );
    const [a, b, c, d] = codes as [string, string, string, string];
    expect((await api.checkout(sale.id, ann as string)).code).toBe("ACCESS_CODE_REQUIRED");
    expect((await api.checkoutWithCode(sale.id, ann as string, "NOT-A-CODE")).code).toBe("ACCESS_CODE_INVALID");
    expect((await api.checkoutWithCode(sale.id, ann as string, fanCode)).code).toBe("ACCESS_CODE_INVALID"); // a later lane's
    // Typed as people type: lower case, spaces, O for 0 and I or L for 1.
    const typed = a.toLowerCase().replaceAll("-", " ").replaceAll("0", "o").replaceAll("1", "l");
    expect((await api.checkoutWithCode(sale.id, ann as string, typed)).status).toBe(202);
    // Bound to ann: another account is refused, and ann's second use finds none left.
    expect((await api.checkoutWithCode(sale.id, bob as string, a)).code).toBe("ACCESS_CODE_INVALID");
    expect((await api.checkoutWithCode(sale.id, ann as string, a)).code).toBe("ACCESS_CODE_USED");
    expect((await api.checkoutWithCode(sale.id, bob as string, b)).status).toBe(202);
    expect((await api.checkoutWithCode(sale.id, cat as string, c)).status).toBe(202);
    // The lane's three units are sold; the sale has seven more, for the fans and the public.
    const lane = await api.checkoutWithCode(sale.id, dan as string, d);
    expect(lane.code).toBe("SOLD_OUT");
    const view = await api.sale(sale.id);
    expect(view.remaining).toBe(7);
    expect(view.status).toBe("upcoming");
    expect(view.lanes.map((l) => l.remaining)).toEqual([0, 2]);

    const listed = await api.codeBatches(sale.id);
    expect(listed.batches.map((x) => ({ lane: x.lane, count: x.count, uses: x.uses, bound: x.bound, spent: x.spent }))).toEqual([
      { lane: "members", count: 5, uses: 1, bound: 3, spent: 3 },
      { lane: "fans", count: 2, uses: 2, bound: 0, spent: 0 },
    ]);
    expect(listed.lanes).toEqual([
      { name: "members", issued: 5, bound: 3, spent: 3, sold: 3 },
      { name: "fans", issued: 2, bound: 0, spent: 0, sold: 0 },
    ]);
    // A refusal spent nothing: dan's code is still his to use in the fans' window.
    expect(await redis.hget(accessCodeKeys(sale.id).batches, `${members.body?.batchId}:spent`)).toBe("3");

    // Revoked, the batch's codes are refused from now on.
    expect((await api.revokeBatch(sale.id, members.body?.batchId as string)).status).toBe(204);
    expect((await api.revokeBatch(sale.id, members.body?.batchId as string)).status).toBe(204);
    expect((await api.revokeBatch(sale.id, "cb_0000000000000000")).code).toBe("BATCH_NOT_FOUND");
    expect((await api.checkoutWithCode(sale.id, eve as string, codes[4] as string)).code).toBe("ACCESS_CODE_INVALID");
    expect((await api.codeBatches(sale.id)).batches[0]?.revoked).toBe(true);

    const orders = await laneOrders(sale.id);
    await eventually("the lane's orders to settle", async () => (await laneOrders(sale.id)).length === 3);
    for (const o of await laneOrders(sale.id))
      expect(o).toMatchObject({ lane: "members", access_code: expect.stringMatching(/^[0-9a-f]{32}$/) });
    expect(orders.length).toBeLessThanOrEqual(3);
  });

  it("roll what a lane left unsold into the next one at its start, take earlier lanes' codes there, and need no code from the public start", async () => {
    const sale = await laneSale(2_500, 5_000, { perUserLimit: 4 });
    const now = Date.now();
    const members = (await api.codeBatch(sale.id, "members", { count: 2 })).body?.codes ?? [];
    const fans = (await api.codeBatch(sale.id, "fans", { count: 1, uses: 5 })).body?.codes ?? [];
    const tokens = await Promise.all(Array.from({ length: 8 }, (_, i) => api.userToken(`roll-${sale.id}-${i}`)));
    const t = (i: number) => tokens[i] as string;
    expect((await api.checkoutWithCode(sale.id, t(0), members[0] as string)).status).toBe(202);
    // The fans' window: members left 2 of their 3, so the fans' lane may sell 2 + 2.
    await sleepUntil(now + 2_700);
    expect((await api.sale(sale.id)).lanes.map((l) => l.remaining)).toEqual([2, 4]);
    expect((await api.checkoutWithCode(sale.id, t(1), members[1] as string)).status).toBe(202); // an earlier lane's code
    // One fans' code of five uses, bound to t(2): three more units, then the lane is out.
    const fanCode = fans[0] as string;
    const bought = [];
    for (let i = 0; i < 4; i++) bought.push((await api.checkoutWithCode(sale.id, t(2), fanCode, 1)).code);
    expect(bought, JSON.stringify(bought)).toEqual(["ACCEPTED", "ACCEPTED", "ACCEPTED", "SOLD_OUT"]);
    // The public start: no code is asked for, and one sent is neither checked nor spent.
    await sleepUntil(now + 5_200);
    expect((await api.checkout(sale.id, t(3))).status).toBe(202);
    expect((await api.checkoutWithCode(sale.id, t(4), "WRONG-CODE-9999")).status).toBe(202);
    const view = await api.sale(sale.id);
    expect(view.status).toBe("live");
    expect(view.remaining).toBe(10 - 7);
  }, 20_000);

  it("give a returned unit back to its lane's allotment and the use back to its code while the lanes are open", async () => {
    const sale = await laneSale(60_000, 120_000, { paymentWindowSec: 600, perUserLimit: 2 });
    const [code] = (await api.codeBatch(sale.id, "members", { count: 1, uses: 1 })).body?.codes ?? [];
    const ann = await api.userToken(`return-${sale.id}-ann`);
    const first = await api.checkoutWithCode(sale.id, ann, code as string);
    expect(first.status).toBe(202);
    expect((await api.checkoutWithCode(sale.id, ann, code as string)).code).toBe("ACCESS_CODE_USED");
    await eventually(
      "the order to await payment",
      async () => (await api.order(first.orderId as string, ann)).body?.status === "awaiting_payment",
    );
    expect((await api.cancel(first.orderId as string, ann)).status).toBe(200);
    await eventually("the unit and the use to come back", async () => {
      const meta = await redis.hmget(saleKeys(sale.id).meta, "ls:members", "remaining");
      return String(meta?.[0]) === "0" && String(meta?.[1]) === "10";
    });
    // The use is back, and the code still ann's: she buys again, bob may not.
    expect((await api.checkoutWithCode(sale.id, await api.userToken(`return-${sale.id}-bob`), code as string)).code).toBe(
      "ACCESS_CODE_INVALID",
    );
    expect((await api.checkoutWithCode(sale.id, ann, code as string)).status).toBe(202);
  });

  it("count codes refused as invalid against the caller's allowance, and refuse a guesser 429 once past it", async () => {
    const sale = await laneSale(60_000, 120_000);
    const guesser = await api.userToken(`guess-${sale.id}`);
    const address = freshAddress();
    const guess = (i: number) =>
      fetchWithVars({ ACCESS_CODE_FAILURES_PER_USER_PER_MIN: "5" }, `/api/sales/${sale.id}/checkout`, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${guesser}`,
          "Access-Code": `ZZZZ-ZZZZ-${String(1000 + i)}`,
          "CF-Connecting-IP": address,
        },
      });
    const statuses: number[] = [];
    await eventually("the guesser to be refused 429", async () => {
      const res = await guess(statuses.length);
      statuses.push(res.status);
      return res.status === 429;
    });
    expect(statuses.slice(0, 5)).toEqual([403, 403, 403, 403, 403]);
    expect(statuses.length).toBeLessThanOrEqual(8);
  });

  it("refuse lanes that do not fit the sale, codes for a lane it has not, and codes once the public start has come", async () => {
    const now = Date.now();
    const refused = async (lanes: unknown[], extra: Record<string, unknown> = {}) => {
      const res = await api.fetch("/admin/sales", {
        method: "POST",
        headers: { Authorization: `Bearer ${env.ADMIN_TOKEN}`, "Content-Type": "application/json" },
        body: JSON.stringify({
          name: "bad lanes",
          stock: 5,
          startsAt: iso(now + 60_000),
          endsAt: iso(now + 120_000),
          lanes,
          ...extra,
        }),
      });
      expect(res.status).toBe(400);
      return ((await res.json()) as { error: { message: string } }).error.message;
    };
    expect(await refused([{ name: "late", startsAt: iso(now + 90_000) }])).toContain("before the sale's public start");
    expect(await refused([{ name: "Bad Name", startsAt: iso(now) }])).toContain("a lane's name");
    expect(
      await refused([
        { name: "b", startsAt: iso(now + 10_000) },
        { name: "a", startsAt: iso(now) },
      ]),
    ).toContain("start order");
    expect(await refused([{ name: "a", startsAt: iso(now), variants: { xl: 1 } }])).toContain("names variant xl");
    const sale = await laneSale(60_000, 120_000);
    expect((await api.codeBatch(sale.id, "nobody", { count: 1 })).code).toBe("LANE_NOT_FOUND");
    expect((await api.codeBatch(sale.id, "members", { count: 0 })).status).toBe(400);
    const open = await api.createSale({ stock: 2 });
    expect((await api.codeBatch(open.id, "members", { count: 1 })).code).toBe("LANE_NOT_FOUND");
    // Lanes change only before the first of them opens.
    expect((await api.editSale(sale.id, { lanes: [] })).code).toBe("SALE_STARTED");
    const later = await laneSale(60_000, 120_000, { lanes: [{ name: "members", startsAt: iso(Date.now() + 30_000) }] });
    // A code that lapses before its lane opens could never be used.
    const lapsing = await api.codeBatch(later.id, "members", { count: 1, expiresAt: iso(Date.now() + 10_000) });
    expect([lapsing.status, lapsing.message]).toEqual([400, expect.stringContaining("after the lane's start")]);
    const edited = await api.editSale(later.id, { lanes: [{ name: "vip", startsAt: iso(Date.now() + 40_000), stock: 1 }] });
    expect(edited.status).toBe(200);
    expect(edited.body?.lanes.map((l) => l.name)).toEqual(["vip"]);
  });

  it("hands the codes over as CSV when asked", async () => {
    const sale = await laneSale(60_000, 120_000);
    const res = await api.fetch(`/admin/sales/${sale.id}/lanes/members/codes`, {
      method: "POST",
      headers: { Authorization: `Bearer ${env.ADMIN_TOKEN}`, "Content-Type": "application/json", Accept: "text/csv" },
      body: JSON.stringify({ count: 3, uses: 2, expiresAt: iso(Date.now() + 600_000) }),
    });
    expect(res.status).toBe(201);
    expect(res.headers.get("Content-Type")).toContain("text/csv");
    const lines = (await res.text()).trim().split("\r\n");
    expect(lines[0]).toBe("code,lane,uses,expires_at");
    expect(lines.slice(1)).toHaveLength(3);
    for (const line of lines.slice(1)) expect(line).toMatch(/^[0-9A-Z]{4}-[0-9A-Z]{4}-[0-9A-Z]{4},members,2,\d{4}-/);
  });

  it("mint staff passes past the line, once each, logged, and never past the stock", async () => {
    const now = Date.now();
    const sale = await api.createSale({
      stock: 2,
      perUserLimit: 2,
      startsAt: iso(now - 1_000),
      queue: { mode: "fifo", prequeueSec: 60, admitPerSec: 1, passTtlSec: 60 },
    });
    const minted = await api.bypass(sale.id, `staff-${sale.id}`);
    expect(minted.status).toBe(201);
    const staff = await api.userToken(`staff-${sale.id}`);
    // Another buyer cannot use it; its own buyer buys once with it.
    expect((await api.checkoutWithPass(sale.id, await api.userToken(`other-${sale.id}`), minted.body?.pass)).code).toBe(
      "QUEUE_PASS_INVALID",
    );
    expect((await api.checkoutWithPass(sale.id, staff, minted.body?.pass)).status).toBe(202);
    expect((await api.checkoutWithPass(sale.id, staff, minted.body?.pass)).code).toBe("QUEUE_PASS_USED");
    // Past the line, never past the stock: the second unit sold, a staff pass buys nothing.
    expect((await api.checkout(sale.id, await api.userToken(`last-${sale.id}`))).code).toBe("QUEUE_PASS_REQUIRED");
    const second = await api.bypass(sale.id, `staff2-${sale.id}`);
    expect((await api.checkoutWithPass(sale.id, await api.userToken(`staff2-${sale.id}`), second.body?.pass)).status).toBe(202);
    const late = await api.bypass(sale.id, `staff3-${sale.id}`);
    expect((await api.checkoutWithPass(sale.id, await api.userToken(`staff3-${sale.id}`), late.body?.pass)).code).toBe(
      "SOLD_OUT",
    );
    const log = (await (
      await api.fetch(`/admin/sales/${sale.id}/bypass`, { headers: { Authorization: `Bearer ${env.ADMIN_TOKEN}` } })
    ).json()) as {
      passes: { userId: string }[];
    };
    expect(log.passes.map((p) => p.userId)).toEqual([`staff3-${sale.id}`, `staff2-${sale.id}`, `staff-${sale.id}`]);
    expect((await api.bypass((await api.createSale({ stock: 1 })).id, "x")).code).toBe("QUEUE_OFF");
  });

  it("come back whole from a restore: allotments sold, codes bound and spent", async () => {
    const sale = await laneSale(60_000, 120_000, { perUserLimit: 4 });
    // Two uses: the first buys two units.
    const [code] = (await api.codeBatch(sale.id, "members", { count: 1, uses: 2 })).body?.codes ?? [];
    const ann = await api.userToken(`restore-${sale.id}-ann`);
    const bought = await api.checkoutWithCode(sale.id, ann, code as string, 2);
    expect(bought.status).toBe(202);
    await eventually("the order to settle", async () => (await laneOrders(sale.id)).length === 1);
    let cursor = "0";
    do {
      const [next, keys] = (await redis.scan(cursor, { match: `fs:{sale:${sale.id}}*`, count: 1_000 })) as [string, string[]];
      if (keys.length > 0) await redis.del(...keys);
      cursor = String(next);
    } while (cursor !== "0");
    const res = await fetchWithVars({ RESTORE_QUIET_MS: "0" }, `/admin/sales/${sale.id}/restore`, {
      method: "POST",
      headers: { Authorization: `Bearer ${env.ADMIN_TOKEN}` },
    });
    expect([200, 409]).toContain(res.status);
    await eventually("the sale to be back", async () => (await redis.exists(saleKeys(sale.id).meta)) === 1);
    expect((await api.sale(sale.id)).lanes[0]?.remaining).toBe(1);
    // Bound to ann with one use left: bob is refused, ann buys the lane's last unit.
    expect((await api.checkoutWithCode(sale.id, await api.userToken(`restore-${sale.id}-bob`), code as string)).code).toBe(
      "ACCESS_CODE_INVALID",
    );
    expect((await api.checkoutWithCode(sale.id, ann, code as string)).status).toBe(202);
    expect((await api.checkoutWithCode(sale.id, ann, code as string)).code).toBe("ACCESS_CODE_USED");
  });
});
