// Admission at the queue join: the human check, deny rules and one account one seat, and the
// quiet tickets of the callers they turn away (a place that never comes up). The join's global
// limits: test/worker/global-limits.test.ts; what quiet polls cost at the gateway:
// test/node/global-limits.test.ts.
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { standInToken, TEST_SECRETS } from "../../dev/turnstile/test-keys";
import { humanCheckAction } from "../../src/admission/human-check";
import type { DenyRuleView, QueueJoined, QueuePosition, SaleStats } from "../../src/shared/api-types";
import { allBuckets, saleKeys } from "../../src/shared/keys";
import { api, BASE, bearer, createSale, eventually, fetchWithVars, redis, userToken } from "./helpers";

const admin = { ...bearer(env.ADMIN_TOKEN), "Content-Type": "application/json" };
const tokenFor = (saleId: string) => standInToken(humanCheckAction(saleId));
const freshAddress = () => `2001:db8:23::${crypto.randomUUID().slice(0, 4)}`;

interface Joiner {
  userId: string;
  status: number;
  code?: string;
  joined?: QueueJoined;
}

/** POST .../queue as `userId`, with `headers` (Human-Check, CF-Connecting-IP) and `vars` over the suite's env. */
async function join(saleId: string, userId: string, headers: Record<string, string> = {}, vars: Partial<Env> = {}) {
  const res = await fetchWithVars(vars, `/api/sales/${saleId}/queue`, {
    method: "POST",
    headers: { ...bearer(await userToken(userId)), ...headers },
  });
  const body = (await res.json()) as QueueJoined & { error?: { code: string } };
  return { userId, status: res.status, code: body.error?.code, joined: res.ok ? body : undefined } satisfies Joiner;
}

async function poll(saleId: string, joiner: Joiner): Promise<QueuePosition> {
  const res = await api.pollQueue(saleId, await userToken(joiner.userId), joiner.joined?.ticket as string);
  if (!res.body) throw new Error(`poll: ${res.status} ${res.code}`);
  return res.body;
}

/** Polls until the joiner is admitted (its pass), a few times a second as a page would. */
async function passOf(saleId: string, joiner: Joiner): Promise<string> {
  const admitted = await eventually(
    `${joiner.userId} admitted`,
    async () => {
      await new Promise((r) => setTimeout(r, 250));
      const p = await poll(saleId, joiner);
      return p.state === "admitted" && p;
    },
    60_000,
  );
  return admitted.pass as string;
}

/** The claims of a ticket, as anyone holding it can read them. */
const claimsOf = (ticket: string) =>
  JSON.parse(atob((ticket.split(".")[1] as string).replaceAll("-", "+").replaceAll("_", "/"))) as Record<string, unknown>;

async function counted(saleId: string, code: string): Promise<number> {
  const res = await SELF.fetch(`${BASE}/admin/sales/${saleId}/stats`, { headers: admin });
  return ((await res.json()) as SaleStats).series.points.reduce((sum, p) => sum + (p.counts[code] ?? 0), 0);
}

/** The sale's buyers, from every bucket (a sale with a waiting room is split for a crowd of joiners, whatever its stock). */
async function buyers(saleId: string): Promise<string[]> {
  const buckets = Number(await redis.hget(saleKeys(saleId).meta, "buckets"));
  const each = await Promise.all(allBuckets(saleId, buckets).map((b) => redis.hkeys(b.buyers)));
  return (each.flat() as string[]).sort();
}

/** A live sale with a fast waiting room: a joiner is admitted within a second. */
const queuedSale = (extra: { humanCheck?: boolean; stock?: number } = {}) =>
  createSale({ stock: extra.stock ?? 5, humanCheck: extra.humanCheck, queue: { mode: "fifo", admitPerSec: 1000 } });

/** The quiet ticket's holder waits while the person behind it is admitted, and cannot buy. */
async function expectNeverComesUp(saleId: string, quiet: Joiner[], person: Joiner): Promise<void> {
  await passOf(saleId, person);
  for (const q of quiet) {
    const standing = await poll(saleId, q);
    expect(standing.state, q.userId).toBe("waiting");
    expect(standing.pass, q.userId).toBeNull();
    // Without a pass: refused, as a person without one is (a denied caller: as sold out).
    const res = await api.checkoutWithPass(saleId, await userToken(q.userId), undefined);
    expect(["QUEUE_PASS_REQUIRED", "SOLD_OUT"], q.userId).toContain(res.code);
  }
}

describe("the human check at the queue join", () => {
  it("is asked for openly when no token comes, passes a good one, and the pass carries it to checkout", async () => {
    const sale = await queuedSale({ humanCheck: true });
    const none = await join(sale.id, "qa-none");
    expect([none.status, none.code]).toEqual([403, "HUMAN_CHECK_REQUIRED"]);
    const person = await join(sale.id, "qa-person", { "Human-Check": tokenFor(sale.id) });
    expect(person.joined).toMatchObject({ place: 1 });
    expect((await api.queueStats(sale.id)).joined).toBe(1);

    // Checkout asks for no token: only a buyer who passed at the join holds a pass.
    const res = await api.checkoutWithPass(sale.id, await userToken("qa-person"), await passOf(sale.id, person));
    expect(res.status).toBe(202);
    expect(await buyers(sale.id)).toEqual(["qa-person"]);
  });

  it("gives a failed, spent, foreign or replayed token a ticket like any other, whose place never comes up", async () => {
    const sale = await queuedSale({ humanCheck: true });
    const other = await queuedSale({ humanCheck: true });
    const replayed = tokenFor(sale.id);
    const first = await join(sale.id, "qa-first", { "Human-Check": replayed });
    const quiet = [
      await join(sale.id, "qa-fails", { "Human-Check": tokenFor(sale.id) }, { TURNSTILE_SECRET_KEY: TEST_SECRETS.fails }),
      await join(sale.id, "qa-spent", { "Human-Check": tokenFor(sale.id) }, { TURNSTILE_SECRET_KEY: TEST_SECRETS.spent }),
      await join(sale.id, "qa-foreign", { "Human-Check": tokenFor(other.id) }),
      await join(sale.id, "qa-replay", { "Human-Check": replayed }),
    ];
    for (const q of quiet) {
      expect(q.status, q.userId).toBe(200);
      expect(q.joined, q.userId).toMatchObject({ place: expect.any(Number), state: expect.stringMatching(/waiting|admitted/) });
      expect(Object.keys(claimsOf(q.joined?.ticket as string))).toEqual(Object.keys(claimsOf(first.joined?.ticket as string)));
    }
    // Only the person is in the line; a person joining after them is admitted, they never are.
    const later = await join(sale.id, "qa-later", { "Human-Check": tokenFor(sale.id) });
    expect((await api.queueStats(sale.id)).joined).toBe(2);
    await expectNeverComesUp(sale.id, quiet, later);
    expect(await buyers(sale.id)).toEqual([]);
    await eventually("four failed checks counted", async () => (await counted(sale.id, "HUMAN_CHECK_FAILED")) === 4, 30_000);
  });

  it("gives a random sale's quiet pre-queue joiner a ticket shaped like a real one: unplaced, with its draw key", async () => {
    const sale = await createSale({
      humanCheck: true,
      startsAt: new Date(Date.now() + 3_600_000).toISOString(),
      endsAt: new Date(Date.now() + 7_200_000).toISOString(),
      queue: { mode: "random", prequeueSec: 7200 },
    });
    const person = await join(sale.id, "qa-draw-person", { "Human-Check": tokenFor(sale.id) });
    const bot = await join(
      sale.id,
      "qa-draw-bot",
      { "Human-Check": tokenFor(sale.id) },
      { TURNSTILE_SECRET_KEY: TEST_SECRETS.fails },
    );
    const [real, quiet] = [claimsOf(person.joined?.ticket as string), claimsOf(bot.joined?.ticket as string)];
    expect(real).toMatchObject({ p: null, d: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(quiet).toMatchObject({ p: null, d: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(bot.joined).toMatchObject({ place: null, state: "waiting" });
    expect((await api.queueStats(sale.id)).joined).toBe(1);
  });
});

describe("deny rules at the queue join", () => {
  it("give a matched caller a quiet ticket, with or without the human check, and count it DENIED", async () => {
    const rule = (await (
      await SELF.fetch(`${BASE}/admin/deny-rules`, {
        method: "POST",
        headers: admin,
        body: JSON.stringify({ kind: "user", value: "qa-denied" }),
      })
    ).json()) as DenyRuleView;
    try {
      for (const humanCheck of [false, true]) {
        const sale = await queuedSale({ humanCheck });
        const denied = await join(sale.id, "qa-denied", { "Human-Check": tokenFor(sale.id) });
        expect(denied.status).toBe(200);
        const person = await join(sale.id, `qa-beside-${humanCheck}`, { "Human-Check": tokenFor(sale.id) });
        expect((await api.queueStats(sale.id)).joined).toBe(1);
        await expectNeverComesUp(sale.id, [denied], person);
        // The join, and the checkout it tried without a pass.
        await eventually("two DENIED counted", async () => (await counted(sale.id, "DENIED")) === 2, 30_000);
      }
    } finally {
      await SELF.fetch(`${BASE}/admin/deny-rules/${rule.id}`, { method: "DELETE", headers: admin });
    }
  });
});

describe("one account, one seat", () => {
  it("joins the first ACCOUNTS_PER_ADDRESS user ids of an address; the ones after get quiet tickets", async () => {
    const sale = await queuedSale();
    const address = freshAddress();
    const vars = { ACCOUNTS_PER_ADDRESS: "2" };
    const from = (userId: string, ip = address) => join(sale.id, userId, { "CF-Connecting-IP": ip }, vars);
    const [a, b, c] = [await from("seat-a"), await from("seat-b"), await from("seat-c")];
    expect([a.joined?.place, b.joined?.place]).toEqual([1, 2]);
    expect(c.status).toBe(200);
    expect((await api.queueStats(sale.id)).joined).toBe(2);
    // The first again keeps its place; another address is counted apart; off by default.
    expect((await from("seat-a")).joined?.ticket).toBe(a.joined?.ticket);
    expect((await from("seat-d", freshAddress())).joined?.place).toBe(3);
    expect((await join(sale.id, "seat-e", { "CF-Connecting-IP": address })).joined?.place).toBe(4);
    await expectNeverComesUp(sale.id, [c], a);
    await eventually("one DENIED counted", async () => (await counted(sale.id, "DENIED")) === 1, 30_000);
  });
});
