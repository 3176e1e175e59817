import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { verifyDraw } from "../../dev/lib/verify-draw";
import { findDrawRun } from "../../src/admission/draw-records";
import { drawStep } from "../../src/admission/draw-run";
import { redisFor } from "../../src/redis/client";
import { findSale } from "../../src/sales/repository";
import type { Sale } from "../../src/sales/sale";
import { drawKeyOf, shuffleOrder, shuffler } from "../../src/shared/draw-proof";
import { everyOtherBatchFails } from "./held-db";
import { api, BASE, eventually, loopbackApi, userToken } from "./helpers";

// A draw crowd in workerd with local D1, the jobs queue and the real Redis: entrants with
// sizes and quantities, withdrawals and double entries, the close, the draw with a beacon,
// winners paying or letting their orders expire, units going down the waitlist, the
// invariants, `verify-draw` passing from public data alone and failing on a tampered list,
// a draw cut short in every phase resuming to the same result, and one stepped twice at once
// counting each entry once.

const SIZES = [
  { id: "s", label: "S", stock: 3 },
  { id: "m", label: "M", stock: 2 },
];
const stock = new Map(SIZES.map((v) => [v.id, v.stock]));

/** The beacon round published at `atMs` (GET <url>/info: drand's genesis and period). */
async function beaconRoundAt(atMs: number): Promise<number> {
  const info = (await (await fetch(`${env.TEST_BEACON_URL}/info`)).json()) as { period: number; genesis_time: number };
  return Math.max(1, Math.ceil((atMs / 1000 - info.genesis_time) / info.period) + 1);
}

/** The API through SELF, the beacon through the network: what `npm run verify-draw` reads. */
const publicFetch: typeof fetch = (input, init) => {
  const url = String(input instanceof Request ? input.url : input);
  return url.startsWith(BASE) ? SELF.fetch(url, init) : fetch(input, init);
};

/** A draw sale whose entries close in `openMs`, paid from the close with a `windowSec` payment window. */
async function drawSale(openMs: number, windowSec: number) {
  const closesAt = Date.now() + openMs;
  return api.createSale({
    name: "draw crowd",
    variants: SIZES,
    perUserLimit: 2,
    startsAt: new Date(closesAt).toISOString(),
    endsAt: new Date(closesAt + 3_600_000).toISOString(),
    paymentWindowSec: windowSec,
    draw: {
      opensAt: new Date(Date.now() - 1_000).toISOString(),
      closesAt: new Date(closesAt).toISOString(),
      beacon: { url: env.TEST_BEACON_URL, round: await beaconRoundAt(closesAt) },
    },
  });
}

/** Entrants `n`, each entering a size and 1 or 2 units. */
async function enterCrowd(saleId: string, n: number) {
  const crowd = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const userId = `crowd-${saleId}-${i}`;
      const token = await userToken(userId);
      const entry = { variant: i % 3 === 0 ? "m" : "s", quantity: 1 + (i % 2) };
      return { userId, token, entry };
    }),
  );
  const answers = await Promise.all(crowd.map((c) => api.enterDraw(saleId, c.token, c.entry)));
  expect(answers.every((a) => a.status === 201)).toBe(true);
  return crowd;
}

describe("a draw crowd", () => {
  it("draws winners per size from the committed list, sends units that come back down the waitlist, and checks out from public data", async () => {
    // Long enough for the payer to pay on a busy machine, short enough for the others to lapse.
    const sale = await drawSale(5_000, 8);
    const crowd = await enterCrowd(sale.id, 30);
    // Double entries change the entry (still one each); withdrawals leave the list.
    for (const c of crowd.slice(0, 5)) expect((await api.enterDraw(sale.id, c.token, c.entry)).status).toBe(200);
    const withdrawn = crowd.slice(25);
    for (const c of withdrawn) expect((await api.withdrawEntry(sale.id, c.token)).status).toBe(204);
    const standing = crowd.slice(0, 25);
    expect((await api.draw(sale.id)).body?.entries).toBe(standing.length);

    await eventually("the entries to close", async () => Date.now() > Date.parse(sale.draw?.closesAt as string) + 200);
    expect((await api.runDraw(sale.id)).status).toBe(202);
    const drawn = await eventually("the draw", async () => {
      const view = (await api.draw(sale.id)).body;
      return view?.state === "drawn" ? view : undefined;
    });
    expect(drawn.entries).toBe(standing.length);
    expect(drawn.beacon?.randomness).toMatch(/^[0-9a-f]{64}$/);

    // Invariants: selected units fit each size's stock; each entrant at most once; every winner in the list.
    const mine = new Map(
      await Promise.all(crowd.map(async (c) => [c.userId, (await api.myEntry(sale.id, c.token)).body] as const)),
    );
    const selectedUnits = new Map<string, number>();
    for (const c of standing) {
      const m = mine.get(c.userId);
      expect(m?.proof?.leafHash).toMatch(/^[0-9a-f]{64}$/);
      if (m?.status === "selected") selectedUnits.set(m.variant, (selectedUnits.get(m.variant) ?? 0) + m.quantity);
    }
    for (const [variant, units] of selectedUnits) expect(units).toBeLessThanOrEqual(stock.get(variant) as number);
    for (const c of withdrawn) expect(mine.get(c.userId)?.status).toBe("withdrawn");
    const leaves = (await api.drawEntries(sale.id)).body?.leaves ?? [];
    expect(new Set(leaves.map((l) => l.entrant)).size).toBe(standing.length);

    // Public data alone: it checks out.
    const verdict = await verifyDraw(BASE, sale.id, publicFetch);
    expect(verdict.problems).toEqual([]);
    expect(verdict.ok).toBe(true);

    // The winners' orders; one pays, the others let theirs expire; the waitlist gets the units, in shuffle order.
    const winners = await eventually("every winner's order", async () => {
      const entries = await Promise.all(standing.map(async (c) => ({ c, m: (await api.myEntry(sale.id, c.token)).body })));
      const won = entries.filter((e) => e.m?.status === "selected");
      return won.every((e) => e.m?.orderId) ? won : undefined;
    });
    const [payer, ...lapsing] = winners;
    if (!payer?.m?.orderId) throw new Error("no winner to pay");
    await eventually(
      "the payer's order to await payment",
      async () => (await api.order(payer.m?.orderId as string, payer.c.token)).body?.status === "awaiting_payment",
    );
    expect((await loopbackApi.pay(payer.m.orderId, payer.c.token, "tok_visa", `draw-pay-${sale.id}`)).status).toBe(200);
    // The lapsed orders expire (8 s window) and their units go to the next waitlisted entries.
    const offeredLater = await eventually(
      "units that came back to reach the waitlist",
      async () => {
        const entries = await Promise.all(standing.map(async (c) => ({ c, m: (await api.myEntry(sale.id, c.token)).body })));
        const later = entries.filter((e) => e.m?.orderId && !winners.some((w) => w.c.userId === e.c.userId));
        return later.length > 0 && lapsing.length > 0 ? later : lapsing.length === 0 ? [] : undefined;
      },
      60_000,
    );
    for (const e of offeredLater) expect(e.m?.status).toBe("selected");
    // Down the waitlist in shuffle order: whoever got a unit that came back, every waitlisted
    // entry of the same size before it in the shuffle that asked no more units got one too.
    const keyOf = await shuffler(await drawKeyOf(drawn.seed as string, drawn.beacon?.randomness ?? null));
    const shuffled = await Promise.all(leaves.map(async (l) => ({ ...l, shuffleKey: await keyOf(l.leafHash) })));
    shuffled.sort(shuffleOrder);
    const offered = new Set(offeredLater.map((e) => e.m?.proof?.leafHash));
    const waitlist = shuffled.filter((l) => l.result === "waitlisted");
    for (const [i, x] of waitlist.entries()) {
      if (!offered.has(x.leafHash)) continue;
      for (const y of waitlist.slice(0, i))
        if (y.variant === x.variant && y.quantity <= x.quantity)
          expect(offered.has(y.leafHash), `${y.leafHash} before ${x.leafHash}`).toBe(true);
    }
    // Offers down the waitlist change no entry's result: the view's counts per size are still the list's.
    const listed = (await api.drawEntries(sale.id)).body?.leaves ?? [];
    const countOf = (variant: string, result?: string) =>
      listed.filter((l) => l.variant === variant && (result === undefined || l.result === result)).length;
    expect((await api.draw(sale.id)).body?.variants).toEqual(
      SIZES.map((v) => ({
        id: v.id,
        stock: v.stock,
        entries: countOf(v.id),
        selected: countOf(v.id, "selected"),
        waitlisted: countOf(v.id, "waitlisted"),
      })),
    );
    // Never more units held than the stock, in D1.
    const { results } = await env.DB.prepare(
      "SELECT variant, SUM(quantity) AS units FROM orders WHERE sale_id = ? AND status IN ('awaiting_payment', 'paid', 'confirmed') GROUP BY variant",
    )
      .bind(Number(sale.id))
      .all<{ variant: string; units: number }>();
    for (const row of results) expect(row.units).toBeLessThanOrEqual(stock.get(row.variant) as number);
  });

  it("fails verification when one published winner or one leaf is changed", async () => {
    const sale = await drawSale(3_000, 600);
    await enterCrowd(sale.id, 8);
    await eventually("the entries to close", async () => Date.now() > Date.parse(sale.draw?.closesAt as string) + 200);
    await api.runDraw(sale.id);
    await eventually("the draw", async () => (await api.draw(sale.id)).body?.state === "drawn");
    expect((await verifyDraw(BASE, sale.id, publicFetch)).ok).toBe(true);

    /** The public API with the committed list's first page changed by `change`. */
    const tampered =
      (change: (leaves: { result?: string; quantity: number }[]) => void): typeof fetch =>
      async (input, init) => {
        const res = await publicFetch(input, init);
        if (!String(input).includes("/draw/entries")) return res;
        const page = (await res.json()) as { leaves: { result?: string; quantity: number }[] };
        change(page.leaves);
        return Response.json(page);
      };
    const winnerChanged = await verifyDraw(
      BASE,
      sale.id,
      tampered((leaves) => {
        const loser = leaves.find((l) => l.result !== "selected");
        if (loser) loser.result = "selected";
      }),
    );
    expect(winnerChanged.ok).toBe(false);
    expect(winnerChanged.problems.join("\n")).toMatch(/is published selected, the draw gives/);
    const leafChanged = await verifyDraw(
      BASE,
      sale.id,
      tampered((leaves) => {
        (leaves[0] as { quantity: number }).quantity += 1;
      }),
    );
    expect(leafChanged.ok).toBe(false);
    expect(leafChanged.problems.join("\n")).toMatch(/its fields hash to/);
  });

  it("resumes a draw cut short in every phase to the result the draw defines", async () => {
    const sale = await drawSale(3_000, 600);
    await enterCrowd(sale.id, 12);
    await eventually("the entries to close", async () => Date.now() > Date.parse(sale.draw?.closesAt as string) + 200);
    const record = (await findSale(env.DB, sale.id)) as Sale;
    // A D1 whose every other write batch fails: each step cut short is run again from where D1 says the run stands.
    const deps = { db: everyOtherBatchFails(env.DB), redis: redisFor(env), fetch };
    let cuts = 0;
    for (let step = 0; step < 200; step++) {
      try {
        const outcome = await drawStep(deps, record);
        if (outcome.next === "done") break;
        if (outcome.next === "wait") await new Promise((r) => setTimeout(r, Math.min(outcome.ms, 500)));
      } catch {
        cuts++;
      }
    }
    expect(cuts).toBeGreaterThan(3);
    expect((await findDrawRun(env.DB, sale.id))?.phase).toBe("drawn");
    const verdict = await verifyDraw(BASE, sale.id, publicFetch);
    expect(verdict.problems).toEqual([]);
    expect(verdict.entries).toBe(12);
  });

  it("counts each entry once when every step runs twice at once", async () => {
    const sale = await drawSale(3_000, 600);
    await enterCrowd(sale.id, 12);
    await eventually("the entries to close", async () => Date.now() > Date.parse(sale.draw?.closesAt as string) + 200);
    const record = (await findSale(env.DB, sale.id)) as Sale;
    const deps = { db: env.DB, redis: redisFor(env), fetch };
    // Both read the run where it stands and write the same step: the run moves once, and its counts add once.
    for (let step = 0; step < 100; step++) {
      const outcomes = await Promise.all([drawStep(deps, record), drawStep(deps, record)]);
      if (outcomes.every((o) => o.next === "done")) break;
      const wait = outcomes.find((o) => o.next === "wait");
      if (wait?.next === "wait") await new Promise((r) => setTimeout(r, Math.min(wait.ms, 500)));
    }
    expect((await findDrawRun(env.DB, sale.id))?.phase).toBe("drawn");
    const verdict = await verifyDraw(BASE, sale.id, publicFetch);
    expect(verdict.problems).toEqual([]);
    expect(verdict.entries).toBe(12);
  });
});
