import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { findDrawRun } from "../../src/admission/draw-records";
import { drawStep } from "../../src/admission/draw-run";
import { drawView } from "../../src/admission/draw-views";
import { enterDraw } from "../../src/admission/draws";
import { countingDb } from "../../src/lab/counting-db";
import { redisFor } from "../../src/redis/client";
import { findSale } from "../../src/sales/repository";
import type { Sale } from "../../src/sales/sale";
import { entrantHash, leafHash, verifyInclusion } from "../../src/shared/draw-proof";
import { api, eventually, userToken } from "./helpers";

// A sale sold by draw, through the API in workerd with local D1 and the jobs queue: entries
// while they are open, the close, the draw the jobs queue runs, and the winners' orders.

const SIZES = [
  { id: "s", label: "S", stock: 2 },
  { id: "m", label: "M", stock: 1 },
];

type DrawRecord = Sale & { draw: NonNullable<Sale["draw"]> };

/** A draw sale whose entries are open now and close in `openMs`, sold (to its winners) from the close. */
async function drawSale(openMs: number, extra: Record<string, unknown> = {}) {
  const closesAt = Date.now() + openMs;
  return api.createSale({
    name: "draw",
    variants: SIZES,
    perUserLimit: 2,
    startsAt: new Date(closesAt).toISOString(),
    endsAt: new Date(closesAt + 3_600_000).toISOString(),
    paymentWindowSec: 600,
    draw: { opensAt: new Date(Date.now() - 1_000).toISOString(), closesAt: new Date(closesAt).toISOString() },
    ...extra,
  });
}

describe("a sale sold by draw", () => {
  it("refuses checkout and the queue join, and a draw setting that does not fit the sale", async () => {
    const sale = await drawSale(60_000);
    expect(sale.draw?.closesAt).toBeDefined();
    const token = await userToken("draw-racer");
    expect((await api.checkout(sale.id, token, 1, "s")).code).toBe("DRAW_ONLY");
    // Warm: the isolate knows it now.
    expect((await api.checkout(sale.id, token, 1, "s")).code).toBe("DRAW_ONLY");
    expect((await api.joinWaitingRoom(sale.id, token)).code).toBe("DRAW_ONLY");
    const late = await api.fetch("/admin/sales", {
      method: "POST",
      headers: { Authorization: `Bearer ${env.ADMIN_TOKEN}`, "Content-Type": "application/json" },
      body: JSON.stringify({
        name: "late close",
        stock: 1,
        startsAt: new Date(Date.now() + 60_000).toISOString(),
        endsAt: new Date(Date.now() + 120_000).toISOString(),
        draw: { opensAt: new Date().toISOString(), closesAt: new Date(Date.now() + 90_000).toISOString() },
      }),
    });
    expect(late.status).toBe(400);
    expect(((await late.json()) as { error: { message: string } }).error.message).toContain(
      "closesAt must be at or before startsAt",
    );
  });

  it("takes one entry per buyer, changed or withdrawn until the close, and refuses edits of what it draws from", async () => {
    const sale = await drawSale(60_000);
    const ada = await userToken("draw-ada");
    const first = await api.enterDraw(sale.id, ada, { variant: "s", quantity: 1 });
    expect(first.status).toBe(201);
    expect(first.body?.entry).toMatchObject({ status: "entered", variant: "s", quantity: 1 });
    expect(first.body?.receipt).toMatch(/^[0-9a-f]{32}$/);
    const changed = await api.enterDraw(sale.id, ada, { variant: "m", quantity: 2 });
    expect(changed.status).toBe(200);
    expect(changed.body?.receipt).toBe(first.body?.receipt);
    expect(changed.body?.entry.enteredAt).toBe(first.body?.entry.enteredAt);
    expect((await api.myEntry(sale.id, ada)).body).toMatchObject({ status: "entered", variant: "m", quantity: 2 });

    expect((await api.enterDraw(sale.id, ada, {})).code).toBe("VARIANT_REQUIRED");
    expect((await api.enterDraw(sale.id, ada, { variant: "xl" })).code).toBe("VARIANT_NOT_FOUND");
    expect((await api.enterDraw(sale.id, ada, { variant: "s", quantity: 3 })).status).toBe(400);

    expect((await api.withdrawEntry(sale.id, ada)).status).toBe(204);
    expect((await api.myEntry(sale.id, ada)).body?.status).toBe("withdrawn");
    expect((await api.withdrawEntry(sale.id, ada)).code).toBe("NOT_ENTERED");
    expect((await api.myEntry(sale.id, await userToken("draw-nobody"))).code).toBe("NOT_ENTERED");
    expect((await api.draw(sale.id)).body).toMatchObject({
      state: "open",
      entries: 0,
      entriesRoot: null,
      seed: null,
      variants: [expect.objectContaining({ id: "s", entries: 0 }), expect.objectContaining({ id: "m", entries: 0 })],
    });

    const edit = await api.editSale(sale.id, { draw: { opensAt: new Date().toISOString(), closesAt: sale.startsAt } });
    expect(edit.code).toBe("DRAW_OPEN");
    expect((await api.runDraw(sale.id)).code).toBe("DRAW_NOT_CLOSED");
  });

  it("commits the entries, draws the winners, offers them orders, and proves each entry's inclusion", async () => {
    const sale = await drawSale(4_000);
    const names = ["w1", "w2", "w3", "w4", "w5"].map((n) => `draw-${sale.id}-${n}`);
    const tokens = await Promise.all(names.map((n) => userToken(n)));
    const entered = await Promise.all(
      tokens.map((token, i) => api.enterDraw(sale.id, token, { variant: i < 4 ? "s" : "m", quantity: 1 })),
    );
    expect(entered.map((e) => e.status)).toEqual([201, 201, 201, 201, 201]);
    expect((await api.enterDraw(sale.id, tokens[0] as string, { variant: "s" })).status).toBe(200); // a double entry stays one
    // While entries are open, each variant's standing entries; no results yet.
    expect((await api.draw(sale.id)).body?.variants).toEqual([
      { id: "s", stock: 2, entries: 4, selected: 0, waitlisted: 0 },
      { id: "m", stock: 1, entries: 1, selected: 0, waitlisted: 0 },
    ]);
    await eventually("the entries to close", async () => Date.now() > Date.parse(sale.draw?.closesAt as string) + 200);
    expect((await api.enterDraw(sale.id, tokens[0] as string, { variant: "s" })).code).toBe("DRAW_CLOSED");
    expect((await api.withdrawEntry(sale.id, tokens[0] as string)).code).toBe("DRAW_CLOSED");

    expect((await api.runDraw(sale.id)).status).toBe(202);
    const drawn = await eventually("the draw to be drawn", async () => {
      const view = (await api.draw(sale.id)).body;
      return view?.state === "drawn" ? view : undefined;
    });
    expect(drawn.entries).toBe(5);
    expect(drawn.entriesRoot).toMatch(/^[0-9a-f]{64}$/);
    expect(drawn.seed).toMatch(/^[0-9a-f]{64}$/);
    expect(drawn.variants).toEqual([
      { id: "s", stock: 2, entries: 4, selected: 2, waitlisted: 2 },
      { id: "m", stock: 1, entries: 1, selected: 1, waitlisted: 0 },
    ]);

    // The public list: every leaf, in tree order, with its result.
    const page = (await api.drawEntries(sale.id)).body;
    expect(page?.next).toBeNull();
    expect(page?.leaves.map((l) => l.leafHash)).toEqual([...(page?.leaves.map((l) => l.leafHash) ?? [])].sort());
    expect(page?.leaves.filter((l) => l.result === "selected")).toHaveLength(3);

    // Each entrant finds their leaf from their receipt and proves it is in the committed tree.
    const winners: string[] = [];
    for (const [i, token] of tokens.entries()) {
      const mine = (await api.myEntry(sale.id, token)).body;
      if (!mine?.proof) throw new Error("no proof");
      const entrant = await entrantHash(names[i] as string, mine.receipt);
      const leaf = await leafHash({ entrant, variant: mine.variant, quantity: mine.quantity });
      expect(mine.proof.leafHash).toBe(leaf);
      expect(
        await verifyInclusion(leaf, mine.proof.leafIndex, mine.proof.treeSize, mine.proof.path, drawn.entriesRoot as string),
      ).toBe(true);
      expect(["selected", "waitlisted"]).toContain(mine.status);
      if (mine.status === "selected") winners.push(names[i] as string);
    }
    expect(winners).toHaveLength(3);

    // The winners get orders awaiting payment from the sale's start.
    const orders = await eventually("the winners' orders", async () => {
      const mines = await Promise.all(tokens.map((t) => api.myEntry(sale.id, t)));
      const ids = mines.flatMap((m) => (m.body?.orderId ? [m.body.orderId] : []));
      return ids.length === 3 ? ids : undefined;
    });
    const settled = await eventually("the winners' orders to settle", async () => {
      const { results } = await env.DB.prepare(
        "SELECT user_id, status FROM orders WHERE order_id IN (SELECT value FROM json_each(?)) ORDER BY user_id",
      )
        .bind(JSON.stringify(orders))
        .all<{ user_id: string; status: string }>();
      return results.length === 3 ? results : undefined;
    });
    expect(settled).toEqual(winners.sort().map((user_id) => ({ user_id, status: "awaiting_payment" })));
  });

  it("shows each variant's counts from a row each: the same D1 rows read for 500 entries as for 50, and the counts the list gives", async () => {
    const sizes = [50, 500];
    const sales = await Promise.all(sizes.map(() => drawSale(10_000)));
    const records = await Promise.all(sales.map(async (s) => (await findSale(env.DB, s.id)) as DrawRecord));
    // Straight into Redis as the route enters them (the route's own path is tested above).
    const entered = await Promise.all(
      records.map((sale, n) =>
        Promise.all(
          Array.from({ length: sizes[n] as number }, (_, i) =>
            enterDraw(redisFor(env), sale, {
              userId: `counts-${sale.id}-${i}`,
              variant: i % 3 === 0 ? "m" : "s",
              quantity: 1 + (i % 2),
              ip: undefined,
              seats: { limit: 0, ttlSeconds: 60 },
              quietly: false,
            }),
          ),
        ),
      ),
    );
    expect(entered.map((answers) => answers.filter((a) => a.code === "ENTERED").length)).toEqual(sizes);
    await eventually(
      "the entries to close",
      async () => Date.now() > Math.max(...records.map((r) => r.draw.closesAt)) + 200,
      20_000,
    );

    /** The view as the route answers it, and the D1 rows it read. */
    const view = async (sale: DrawRecord) => {
      const counted = countingDb(env.DB);
      const answer = await drawView(counted.db, redisFor(env), sale);
      expect((await api.draw(sale.id)).body).toEqual(answer);
      return { answer, rowsRead: counted.rowsRead };
    };
    /** Each variant's counts as the whole committed list gives them. */
    const listCounts = async (saleId: string, drawn: boolean) => {
      const { results } = await env.DB.prepare(
        `SELECT variant, COUNT(*) AS entries, SUM(result IS 'selected') AS selected, SUM(result IS 'waitlisted') AS waitlisted
         FROM draw_entries WHERE sale_id = ? GROUP BY variant`,
      )
        .bind(Number(saleId))
        .all<{ variant: string; entries: number; selected: number; waitlisted: number }>();
      return SIZES.map((v) => {
        const row = results.find((r) => r.variant === v.id);
        return {
          id: v.id,
          stock: v.stock,
          entries: row?.entries ?? 0,
          selected: drawn ? (row?.selected ?? 0) : 0,
          waitlisted: drawn ? (row?.waitlisted ?? 0) : 0,
        };
      });
    };
    /** Steps the sale's draw until `until` says it is there. */
    const stepUntil = async (sale: DrawRecord, until: (phase: string | undefined) => boolean) => {
      for (let step = 0; step < 100 && !until((await findDrawRun(env.DB, sale.id))?.phase); step++) {
        const outcome = await drawStep({ db: env.DB, redis: redisFor(env), fetch }, sale);
        if (outcome.next === "wait") await new Promise((r) => setTimeout(r, Math.min(outcome.ms, 500)));
      }
    };

    const committed = [];
    const drawn = [];
    for (const [n, sale] of records.entries()) {
      // Committed (the tree's root published), not drawn yet: the entries per variant, no results.
      await stepUntil(sale, (phase) => phase === "beacon");
      const atCommit = await view(sale);
      expect(atCommit.answer).toMatchObject({ state: "drawing", entries: sizes[n] });
      expect(atCommit.answer.variants).toEqual(await listCounts(sale.id, false));
      committed.push(atCommit.rowsRead);
      await stepUntil(sale, (phase) => phase === "drawn");
      const atDraw = await view(sale);
      expect(atDraw.answer).toMatchObject({ state: "drawn", entries: sizes[n] });
      expect(atDraw.answer.variants).toEqual(await listCounts(sale.id, true));
      expect(atDraw.answer.variants.every((v) => v.selected > 0 && v.waitlisted > 0)).toBe(true);
      drawn.push(atDraw.rowsRead);
    }
    // The run's row and a row per variant, whatever the entries (counting the list read every entry).
    expect(committed[1]).toBe(committed[0]);
    expect(drawn[1]).toBe(drawn[0]);
    expect(Math.max(...committed, ...drawn)).toBeLessThanOrEqual(1 + SIZES.length);
  });
});
