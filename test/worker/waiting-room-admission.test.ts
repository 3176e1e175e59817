// Admission at the queue join: the human check, deny rules and one account one seat, and the
// quiet tickets of the callers they turn away (a place of their own, whose pass buys nothing),
// which look like a person's in everything their holder sees. The join's global limits:
// test/worker/global-limits.test.ts; what quiet polls cost at the gateway:
// test/node/global-limits.test.ts. Joins run as the local stack serves them (loopback hosts
// only), where the suite's Turnstile test secret is accepted.
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { standInToken, TEST_SECRETS } from "../../dev/turnstile/test-keys";
import { humanCheckAction } from "../../src/admission/human-check";
import type { DenyRuleView, QueueJoined, QueuePosition, SaleStats } from "../../src/shared/api-types";
import { allBuckets, saleKeys } from "../../src/shared/keys";
import { api, BASE, bearer, createSale, eventually, fetchAsLocalStack, freshAddress, redis, userToken } from "./helpers";

const admin = { ...bearer(env.ADMIN_TOKEN), "Content-Type": "application/json" };
const HOUR_MS = 3_600_000;
const tokenFor = (saleId: string) => standInToken(humanCheckAction(saleId));

interface Joiner {
  userId: string;
  status: number;
  code?: string;
  joined?: QueueJoined;
  /** The answer's header names. */
  headers?: string[];
}

/** POST .../queue as `userId`, with `headers` (Human-Check, CF-Connecting-IP) and `vars` over the local stack's env. */
async function join(saleId: string, userId: string, headers: Record<string, string> = {}, vars: Partial<Env> = {}) {
  const res = await fetchAsLocalStack(vars, `/api/sales/${saleId}/queue`, {
    method: "POST",
    headers: { ...bearer(await userToken(userId)), ...headers },
  });
  const body = (await res.json()) as QueueJoined & { error?: { code: string } };
  return {
    userId,
    status: res.status,
    code: body.error?.code,
    joined: res.ok ? body : undefined,
    headers: [...res.headers.keys()].sort(),
  } satisfies Joiner;
}

/** Polls until the joiner is admitted, a few times a second as a page would: the poll that said so. */
const admittedSeen = (saleId: string, joiner: Joiner) =>
  eventually(
    `${joiner.userId} admitted`,
    async () => {
      await new Promise((r) => setTimeout(r, 250));
      const seen = await pollSeen(saleId, joiner);
      return seen.body.state === "admitted" && seen;
    },
    60_000,
  );

/** Polls until the joiner is admitted: its pass. */
const passOf = async (saleId: string, joiner: Joiner): Promise<string> =>
  (await admittedSeen(saleId, joiner)).body.pass as string;

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

const remainingOf = async (saleId: string) => String(await redis.hget(saleKeys(saleId).meta, "remaining"));

/**
 * At their turn the quiet tickets' holders poll as the person behind them does: admitted, with
 * a pass of the same shape and time left. But a quiet pass buys nothing: it is refused as sold
 * out, units left or not, with nothing spent, and the isolate learns no sold-out from it: the
 * person's pass, used after them, buys.
 */
async function expectQuietTurnBuysNothing(saleId: string, quiet: Joiner[], person: Joiner): Promise<void> {
  const personSeen = await admittedSeen(saleId, person);
  const units = await remainingOf(saleId);
  expect(Number(units)).toBeGreaterThan(0);
  for (const q of quiet) {
    const seen = await pollSeen(saleId, q);
    expect(seen.body.place as number, q.userId).toBeLessThan(person.joined?.place as number);
    expect(seen.status, q.userId).toBe(personSeen.status);
    expect(shapeOf(seen.body, seen.headers), q.userId).toEqual(shapeOf(personSeen.body, personSeen.headers));
    expect(seen.body.state, q.userId).toBe("admitted");
    expect(Object.keys(claimsOf(seen.body.pass as string)).sort(), q.userId).toEqual(
      Object.keys(claimsOf(personSeen.body.pass as string)).sort(),
    );
    expect(seen.body.passExpiresAt, q.userId).toEqual(expect.any(String));
    expect(Math.abs(seen.body.retryAfterSec - personSeen.body.retryAfterSec), q.userId).toBeLessThanOrEqual(1);
    // Without a pass: refused, as a person without one is (a denied caller: as sold out).
    const without = await api.checkoutWithPass(saleId, await userToken(q.userId), undefined);
    expect(["QUEUE_PASS_REQUIRED", "SOLD_OUT"], q.userId).toContain(without.code);
    // With its pass: sold out, as a person is when the units are gone, and nothing spent.
    const res = await api.checkoutWithPass(saleId, await userToken(q.userId), seen.body.pass as string);
    expect([res.status, res.code], q.userId).toEqual([409, "SOLD_OUT"]);
    expect(await remainingOf(saleId), q.userId).toBe(units);
  }
  const bought = await api.checkoutWithPass(saleId, await userToken(person.userId), personSeen.body.pass as string);
  expect(bought.status).toBe(202);
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

  it("gives a failed, spent, foreign or replayed token a ticket like any other, whose pass buys nothing", async () => {
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
      // A live sale with room to spare reaches a place at once: a quiet one then answers
      // admitted, as a person's (docs/bots-and-limits.md, "Quiet tickets").
      expect(q.joined, q.userId).toMatchObject({ place: expect.any(Number), state: expect.stringMatching(/waiting|admitted/) });
      expect(Object.keys(claimsOf(q.joined?.ticket as string))).toEqual(Object.keys(claimsOf(first.joined?.ticket as string)));
    }
    // Each holds a place of its own (counted as joined); at their turn they look admitted as the person after them is, and buy nothing.
    const later = await join(sale.id, "qa-later", { "Human-Check": tokenFor(sale.id) });
    expect((await api.queueStats(sale.id)).joined).toBe(6);
    const places = [first, ...quiet, later].map((j) => j.joined?.place);
    expect(new Set(places).size).toBe(6);
    await expectQuietTurnBuysNothing(sale.id, quiet, later);
    expect(await buyers(sale.id)).toEqual(["qa-later"]);
    await eventually("four failed checks counted", async () => (await counted(sale.id, "HUMAN_CHECK_FAILED")) === 4, 30_000);
    // Their passes reached the script, which counted each refusal as what it was.
    await eventually("four quiet passes counted", async () => (await counted(sale.id, "QUIET_PASS")) === 4, 30_000);
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
    expect((await api.queueStats(sale.id)).joined).toBe(2);
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
        expect((await api.queueStats(sale.id)).joined).toBe(2);
        await expectQuietTurnBuysNothing(sale.id, [denied], person);
        // The join, and the checkouts it tried without its pass and with it.
        await eventually("three DENIED counted", async () => (await counted(sale.id, "DENIED")) === 3, 30_000);
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
    expect([a.joined?.place, b.joined?.place, c.joined?.place]).toEqual([1, 2, 3]);
    expect(c.status).toBe(200);
    // The first again keeps its place; so does the quiet one; another address is counted apart; off by default.
    expect((await from("seat-a")).joined?.ticket).toBe(a.joined?.ticket);
    expect((await from("seat-c")).joined?.ticket).toBe(c.joined?.ticket);
    const d = await from("seat-d", freshAddress());
    expect(d.joined?.place).toBe(4);
    expect((await join(sale.id, "seat-e", { "CF-Connecting-IP": address })).joined?.place).toBe(5);
    await expectQuietTurnBuysNothing(sale.id, [c], d);
    await eventually("one DENIED counted", async () => (await counted(sale.id, "DENIED")) === 1, 30_000);
  });
});

/** What a holder sees of an answer, values aside: its fields, the claims its ticket carries, its header names. */
const shapeOf = (body: object, headers: string[]) => ({
  fields: Object.keys(body).sort(),
  claims: "ticket" in body ? Object.keys(claimsOf(String(body.ticket))).sort() : [],
  headers,
});

/** A poll as the page makes it: the placed ticket of its Queue-Ticket header kept for the next. */
async function pollSeen(saleId: string, joiner: Joiner) {
  const res = await api.pollQueue(saleId, await userToken(joiner.userId), joiner.joined?.ticket as string);
  if (!res.body) throw new Error(`poll: ${res.status} ${res.code}`);
  const placed = res.headers.get("Queue-Ticket");
  if (placed && joiner.joined) joiner.joined.ticket = placed;
  return { status: res.status, body: res.body, headers: [...res.headers.keys()].sort(), placed };
}

/**
 * The two answers look alike to their holders: the same status, fields, claims, headers and
 * state (waiting, or paused while the sale is), places each their own and never reached.
 */
function expectAlike(
  quiet: { status: number; body: QueuePosition | QueueJoined; headers: string[] },
  person: { status: number; body: QueuePosition | QueueJoined; headers: string[] },
  state: "waiting" | "paused" = "waiting",
) {
  expect(quiet.status).toBe(person.status);
  expect(shapeOf(quiet.body, quiet.headers)).toEqual(shapeOf(person.body, person.headers));
  expect(quiet.body.state).toBe(person.body.state);
  expect(quiet.body.state).toBe(state);
  expect(typeof quiet.body.place).toBe(typeof person.body.place);
  expect(Math.abs(quiet.body.retryAfterSec - person.body.retryAfterSec)).toBeLessThanOrEqual(1);
  if ("admittedThrough" in quiet.body && "admittedThrough" in person.body) {
    for (const { body } of [quiet, person] as { body: QueuePosition }[]) {
      expect(body.pass).toBeNull();
      expect(body.passExpiresAt).toBeNull();
      if (body.place !== null) {
        expect(body.place).toBeGreaterThan(body.admittedThrough);
        expect(body.aheadOfYou).toBe(body.place - body.admittedThrough - 1);
      }
    }
  }
}

/** A sale of one unit starting in five seconds, its line letting in fast, a pass lasting the test out. */
async function startingSoon(mode: "fifo" | "random") {
  const startsAt = Date.now() + 5_000;
  const sale = await createSale({
    stock: 1,
    startsAt: new Date(startsAt).toISOString(),
    endsAt: new Date(startsAt + HOUR_MS).toISOString(),
    queue: { mode, admitPerSec: 1000, passTtlSec: 3_600 },
  });
  return { sale, startsAt };
}

describe("a quiet joiner and a person, as their holders see them", () => {
  const X = "192.0.2.71";
  const vars = { ACCOUNTS_PER_ADDRESS: "1" };

  it("fifo: places of their own, kept on joining again, the same answers before and after the start", async () => {
    const { sale, startsAt } = await startingSoon("fifo");
    const alice = await join(sale.id, "alike-alice", { "CF-Connecting-IP": X }, vars);
    const bob = await join(sale.id, "alike-bob", { "CF-Connecting-IP": X }, vars); // one account too many: quiet
    const carol = await join(sale.id, "alike-carol", { "CF-Connecting-IP": freshAddress() }, vars);
    expect([alice, bob, carol].map((j) => j.joined?.place)).toEqual([1, 2, 3]);
    expectAlike(
      { status: bob.status, body: bob.joined as QueueJoined, headers: bob.headers ?? [] },
      { status: carol.status, body: carol.joined as QueueJoined, headers: carol.headers ?? [] },
    );
    // Joining again: each keeps its ticket and place.
    for (const [joiner, address] of [
      [bob, X],
      [carol, freshAddress()],
    ] as const) {
      const again = await join(sale.id, joiner.userId, { "CF-Connecting-IP": address }, vars);
      expect(again.joined?.ticket).toBe(joiner.joined?.ticket);
      expect(again.headers).toEqual(joiner.headers);
    }
    expectAlike(await pollSeen(sale.id, bob), await pollSeen(sale.id, carol));

    // After the start: the one unit's pass goes to alice; bob and carol wait alike behind it.
    await new Promise((r) => setTimeout(r, Math.max(0, startsAt - Date.now())));
    await passOf(sale.id, alice);
    expectAlike(await pollSeen(sale.id, bob), await pollSeen(sale.id, carol));
    expect((await pollSeen(sale.id, bob)).body.admittedThrough).toBe(1);
  });

  it("random: unplaced with a draw key, placed at the start with a Queue-Ticket header alike", async () => {
    const { sale, startsAt } = await startingSoon("random");
    await join(sale.id, "draw-alice", { "CF-Connecting-IP": X }, vars);
    const bob = await join(sale.id, "draw-bob", { "CF-Connecting-IP": X }, vars);
    const carol = await join(sale.id, "draw-carol", { "CF-Connecting-IP": freshAddress() }, vars);
    expect([bob.joined?.place, carol.joined?.place]).toEqual([null, null]);
    expectAlike(
      { status: bob.status, body: bob.joined as QueueJoined, headers: bob.headers ?? [] },
      { status: carol.status, body: carol.joined as QueueJoined, headers: carol.headers ?? [] },
    );
    expect(Object.keys(claimsOf(bob.joined?.ticket as string)).sort()).toEqual(["d", "p", "s", "u"]);
    expectAlike(await pollSeen(sale.id, bob), await pollSeen(sale.id, carol));
    // Paused over the start: nobody is let in, whoever the draw puts first, and both are placed.
    expect((await api.setSaleState(sale.id, "pause")).status).toBe(200);
    await new Promise((r) => setTimeout(r, Math.max(0, startsAt - Date.now())));
    const [quietPlaced, personPlaced] = await eventually(
      "both tickets placed",
      async () => {
        await new Promise((r) => setTimeout(r, 300));
        const [q, p] = [await pollSeen(sale.id, bob), await pollSeen(sale.id, carol)];
        expect(Boolean(q.placed)).toBe(Boolean(p.placed)); // placed at the same moment, or neither
        return q.placed && p.placed ? ([q, p] as const) : false;
      },
      30_000,
    );
    expectAlike(quietPlaced, personPlaced, "paused");
    expect(Object.keys(claimsOf(bob.joined?.ticket as string)).sort()).toEqual(["p", "s", "u"]);
    const places = [quietPlaced.body.place, personPlaced.body.place];
    expect(places.every((p) => typeof p === "number" && p >= 1 && p <= 3)).toBe(true);
    expect(new Set(places).size).toBe(2);
    expectAlike(await pollSeen(sale.id, bob), await pollSeen(sale.id, carol), "paused");
  });
});

describe("one account, one seat, by the address people hold", () => {
  it("counts an IPv6 caller by its /64 (ADDRESS_PREFIX_V6): a host moving inside it is one address", async () => {
    const sale = await queuedSale();
    const vars = { ACCOUNTS_PER_ADDRESS: "1" };
    const a = await join(sale.id, "v6-a", { "CF-Connecting-IP": "2001:db8:77:1::1" }, vars);
    const b = await join(sale.id, "v6-b", { "CF-Connecting-IP": "2001:db8:77:1:ffff::2" }, vars);
    const other = await join(sale.id, "v6-other", { "CF-Connecting-IP": "2001:db8:77:2::1" }, vars);
    expect([a.joined?.place, b.joined?.place, other.joined?.place]).toEqual([1, 2, 3]);
    await expectQuietTurnBuysNothing(sale.id, [b], other);
    // A wider prefix groups more: the /64s of one /48 together.
    const wide = await queuedSale();
    const wider = { ...vars, ADDRESS_PREFIX_V6: "48" };
    await join(wide.id, "v6-wide-a", { "CF-Connecting-IP": "2001:db8:78:1::1" }, wider);
    const beyond = await join(wide.id, "v6-wide-b", { "CF-Connecting-IP": "2001:db8:78:2::1" }, wider);
    const later = await join(wide.id, "v6-wide-later", { "CF-Connecting-IP": freshAddress() }, wider);
    await expectQuietTurnBuysNothing(wide.id, [beyond], later);
  });

  it("on a sale with the human check, lets a crowd behind one shared IPv4 address join: the check decides", async () => {
    const sale = await queuedSale({ humanCheck: true, stock: 10 });
    const nat = "198.51.100.200";
    const crowd = [];
    for (let i = 0; i < 4; i++) {
      crowd.push(
        await join(
          sale.id,
          `nat-${i}`,
          { "CF-Connecting-IP": nat, "Human-Check": tokenFor(sale.id) },
          { ACCOUNTS_PER_ADDRESS: "1" },
        ),
      );
    }
    expect(crowd.map((j) => j.joined?.place)).toEqual([1, 2, 3, 4]);
    for (const person of crowd) expect(await passOf(sale.id, person)).toMatch(/^qp1\./);
    // A token that does not pass still loses quietly, shared address or not.
    const bot = await join(
      sale.id,
      "nat-bot",
      { "CF-Connecting-IP": nat, "Human-Check": tokenFor(sale.id) },
      { ACCOUNTS_PER_ADDRESS: "1", TURNSTILE_SECRET_KEY: TEST_SECRETS.fails },
    );
    const after = await join(sale.id, "nat-after", { "CF-Connecting-IP": nat, "Human-Check": tokenFor(sale.id) });
    await expectQuietTurnBuysNothing(sale.id, [bot], after);
  });
});

describe("a buyer who holds a place already", () => {
  it("is answered that place before any token is judged: a spent, failing or missing token changes nothing", async () => {
    const sale = await queuedSale({ humanCheck: true });
    const token = tokenFor(sale.id);
    const first = await join(sale.id, "held-first", { "Human-Check": token });
    expect(first.joined?.place).toBe(1);
    for (const retry of [
      await join(sale.id, "held-first", { "Human-Check": token }), // the same token again: spent
      await join(sale.id, "held-first", { "Human-Check": tokenFor(sale.id) }, { TURNSTILE_SECRET_KEY: TEST_SECRETS.fails }),
      await join(sale.id, "held-first"), // none at all
    ]) {
      expect(retry.status).toBe(200);
      expect(retry.joined?.ticket).toBe(first.joined?.ticket);
    }
    // Nothing was judged: the one failed check counted is a newcomer's, and the buyer is let in.
    await join(sale.id, "held-newcomer", { "Human-Check": tokenFor(sale.id) }, { TURNSTILE_SECRET_KEY: TEST_SECRETS.fails });
    await eventually(
      "the newcomer's failed check counted",
      async () => (await counted(sale.id, "HUMAN_CHECK_FAILED")) >= 1,
      30_000,
    );
    expect(await counted(sale.id, "HUMAN_CHECK_FAILED")).toBe(1);
    await passOf(sale.id, first);
  });
});
