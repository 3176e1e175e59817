// Property-based requests against every route of the app, taken from the app itself (routes
// added later are fuzzed without a change here), with methods, headers, tokens and bodies
// drawn by fast-check from a fixed seed. They run through the Worker's fetch handler against
// the real stack (redis-server behind the gateway, local D1 and Queues), with the lab on so
// its routes are reached too. Every answer must hold:
//   - no 5xx but 503 with Retry-After;
//   - every error in the one JSON shape, without a stack trace;
//   - a refusal changes nothing: the fixture sale's and lab sale's reports and the sales in D1;
//   - no token or secret in the answer, headers included.
// Then every header, claim and cursor the API reads, drawn malformed (and near misses of
// genuine ones) on the routes that read it, with everything else in the request right: none
// is ever a 5xx, each is an error in the one shape, and where the contract names the answer
// (a Queue-Pass, a Queue-Ticket, a token, a webhook signature) it is exactly that one.
import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { signPass, signTicket } from "../../src/admission/signed-claims";
import { app } from "../../src/app";
import worker from "../../src/index";
import type { LabSaleReport } from "../../src/shared/lab-types";
import { api, createSale, handleWithVars, report, userToken } from "./helpers";

const SEED = 20_261_128;
const RUNS = 300;
const ORIGIN = "https://flash.test";

/** Every method and path the app answers, from its own route table (middleware excluded). */
const routes = [...new Map(app.routes.filter((r) => r.method !== "ALL").map((r) => [`${r.method} ${r.path}`, r])).values()].map(
  ({ method, path }) => ({ method, path }),
);

/** A request through the Worker with the lab on. */
const through = (req: Request) => handleWithVars({ LAB_ENABLED: "true" }, req);

/** Genuine claims of a buyer in a queued sale, to draw near misses of; and genuine ones that are not theirs. */
interface Claims {
  ticket: string;
  pass: string;
  /** Another buyer's and another sale's tickets and passes: each genuine, none this buyer's here. */
  others: string[];
}

interface Fixture {
  saleId: string;
  orderId: string;
  labSaleId: string;
  userTokens: string[];
  /** A waiting room with the human check at the join. */
  queuedSaleId: string;
  /** The human check at checkout, no waiting room. */
  humanSaleId: string;
  endpointId: string;
  /** A buyer of the queued sale, and their claims. */
  buyer: { token: string; claims: Claims };
  /** Everything no answer may contain. */
  secrets: string[];
}
let fixture: Fixture;

const admin = { Authorization: `Bearer ${env.ADMIN_TOKEN}`, "Content-Type": "application/json" };

/** Genuine claims of `userId` in `saleId`, signed as the Worker signs them. */
async function claimsOf(saleId: string, userId: string, otherSaleId: string): Promise<Claims> {
  const secret = env.JWT_SECRET;
  const e = Date.now() + 3_600_000;
  const [ticket, pass, ...others] = await Promise.all([
    signTicket(secret, { s: saleId, u: userId, p: 1 }),
    signPass(secret, { s: saleId, u: userId, p: 1, e }),
    signTicket(secret, { s: saleId, u: `${userId}-other`, p: 2 }),
    signPass(secret, { s: saleId, u: `${userId}-other`, p: 2, e }),
    signTicket(secret, { s: otherSaleId, u: userId, p: 1 }),
    signPass(secret, { s: otherSaleId, u: userId, p: 1, e }),
  ]);
  return { ticket: ticket as string, pass: pass as string, others };
}

beforeAll(async () => {
  const sale = await createSale({ stock: 40 });
  const userTokens = await Promise.all(Array.from({ length: 6 }, (_, i) => userToken(`fuzz-${sale.id}-${i}`)));
  const res = await api.checkoutResponse(sale.id, userTokens[0] as string);
  const { orderId } = (await res.json()) as { orderId: string };
  const lab = await through(
    new Request(`${ORIGIN}/lab/sales`, { method: "POST", headers: admin, body: JSON.stringify({ stock: 10 }) }),
  );
  const { id: labSaleId } = (await lab.json()) as { id: string };
  const queued = await createSale({ stock: 40, humanCheck: true, queue: { mode: "fifo", admitPerSec: 1000 } });
  const human = await createSale({ stock: 40, humanCheck: true });
  const endpoint = await through(
    new Request(`${ORIGIN}/admin/webhooks`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify({ url: "https://fuzz.shop.example/events", events: ["order.paid"] }),
    }),
  );
  const { id: endpointId } = (await endpoint.json()) as { id: string };
  const buyerId = `fuzz-buyer-${queued.id}`;
  fixture = {
    saleId: sale.id,
    orderId,
    labSaleId,
    userTokens,
    queuedSaleId: queued.id,
    humanSaleId: human.id,
    endpointId,
    buyer: { token: await userToken(buyerId), claims: await claimsOf(queued.id, buyerId, sale.id) },
    secrets: [env.ADMIN_TOKEN, env.JWT_SECRET, env.UPSTASH_REDIS_REST_TOKEN, env.PAYMENT_WEBHOOK_SECRET as string, ...userTokens],
  };
});

// --- what the fuzzer draws --------------------------------------------------------------

const printable = (maxLength: number) =>
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength });
const anyText = fc.string({ unit: "grapheme", maxLength: 40 });

const BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** A genuine token changed a little: a character replaced, cut short, grown, split, or its kind swapped. */
const nearMiss = (genuine: () => string) =>
  fc
    .tuple(fc.nat(), fc.integer({ min: 1, max: 63 }), fc.constantFrom("replace", "cut", "grow", "split", "kind"))
    .map(([at, shift, how]) => {
      const token = genuine();
      const i = at % token.length;
      const swap = (c: string) => BASE64URL[(BASE64URL.indexOf(c) + shift) % 64] as string;
      switch (how) {
        case "replace":
          return `${token.slice(0, i)}${token[i] === "." ? "A" : swap(token[i] as string)}${token.slice(i + 1)}`;
        case "cut":
          return token.slice(0, i);
        case "grow":
          return `${token}${BASE64URL[shift]}`;
        case "split":
          return `${token.slice(0, i)}.${token.slice(i)}`;
        default:
          return token.startsWith("qt1.") ? `qp1${token.slice(3)}` : `qt1${token.slice(3)}`;
      }
    });

/**
 * Anything a client could send as a claim of `kind` (qt1: a ticket, qp1: a pass) that this API
 * did not give the fixture's buyer for its sale: the shapes that once made atob throw, segments
 * of base64url (and not) of every length, near misses of the buyer's genuine ones, genuine ones
 * that are not theirs, and any header text at all.
 */
function claimArb(kind: "qt1" | "qp1"): fc.Arbitrary<string> {
  const segment = fc.stringMatching(/^[A-Za-z0-9_=+/-]{0,60}$/);
  const mac43 = "A".repeat(43);
  return fc.oneof(
    fc.constantFrom(
      `${kind}.e30.A`,
      `${kind}.e30.AAAAA`,
      `${kind}.e30.`,
      `${kind}..`,
      `${kind}.`,
      kind,
      "",
      ".",
      "...",
      `${kind}.e30.${mac43}`,
      `${kind}.bnVsbA.${mac43}`,
      `${kind}.e30.${mac43}.`,
      `${kind}.e30.${mac43}=`,
      `${kind}.e30.${"A".repeat(44)}`,
      `${kind}.${"e30".repeat(2000)}.${mac43}`,
    ),
    fc.tuple(segment, segment).map(([claims, mac]) => `${kind}.${claims}.${mac}`),
    nearMiss(() => (kind === "qt1" ? fixture.buyer.claims.ticket : fixture.buyer.claims.pass)),
    fc.nat().map((i) => {
      // Genuine, but not this buyer's here; or theirs of the other kind (a ticket is no pass, a pass no ticket).
      const { ticket, pass, others } = fixture.buyer.claims;
      const notTheirs = [...others, kind === "qt1" ? pass : ticket];
      return notTheirs[i % notTheirs.length] as string;
    }),
    printable(300),
  );
}

/** Human-Check tokens: Turnstile's dummy, the stand-in's shape for another action, far too long, anything. */
const humanCheckArb = fc.oneof(
  fc.constantFrom("", "XXXX.DUMMY.TOKEN.XXXX", "stand-in.x:other-action", "stand-in.:", "x".repeat(2049), "x".repeat(20_000)),
  printable(300),
);

/** If-Match: ETags this API gives and near misses of them. */
const ifMatchArb = fc.oneof(
  fc.nat({ max: 5 }).map((v) => `"${v}"`),
  fc.nat({ max: 5 }).map((v) => `W/"${v}"`),
  fc.constantFrom("*", '""', '"-1"', '"99999999999999999999"', '"1", "2"', "W/", "1"),
  printable(60),
);

/** Client addresses: IPv4, IPv6 in every notation, and what no address is. */
const addressArb = fc.oneof(
  fc.ipV4(),
  fc.ipV6(),
  fc.ipV4Extended(),
  fc.constantFrom("::ffff:127.0.0.1", "fe80::1%eth0", "2001:db8::/48", "unknown", "", "1.2.3.4, 5.6.7.8"),
  printable(60),
);

/** Cursors and page parameters: near misses of every paged route's shapes, numbers out of range, anything. */
const pageTextArb = fc.oneof(
  fc.stringMatching(/^\d{1,20}\.\d{1,25}$/),
  fc.stringMatching(/^-?\d{1,20}$/),
  fc.constantFrom("9999999999999999.99999999999999999999", "9007199254740993", "1e308", "NaN", "Infinity", "0.0", ".", ""),
  fc.constantFrom("0x10", "paid", "pending", "failed", "\u0661\u0662\u0663", "1 ", "%", "999999999"),
  anyText,
);

/** A path parameter: mostly the fixture's real id, else a near miss or anything at all. */
function paramArb(name: string): fc.Arbitrary<string> {
  const known: Record<string, { real: () => string; nearMisses: string[] }> = {
    saleId: { real: () => fixture.saleId, nearMisses: ["1", "999999999", "9007199254740993", "0", "-1", "1e3", "%20"] },
    orderId: { real: () => fixture.orderId, nearMisses: ["1", "18446744073709551616", "9223372036854775807", "0x10"] },
    labSaleId: { real: () => fixture.labSaleId, nearMisses: ["00000000-0000-0000-0000-000000000000", "A".repeat(36)] },
    id: { real: () => fixture.endpointId, nearMisses: ["ep_000000000000000000000000", "ep_", `ep_${"f".repeat(25)}`, "1"] },
    strategy: { real: () => "atomic", nearMisses: ["naive", "lock", "optimistic", "NAIVE", "__proto__"] },
  };
  const generic = fc
    .oneof(anyText, fc.stringMatching(/^[0-9]{1,25}$/), fc.constantFrom("%00", "..", "%2e%2e%2f", "%F0%9F%98%80", "a%zz"))
    .filter((s) => s.length > 0)
    .map((s) => (/%/.test(s) ? s : encodeURIComponent(s)));
  const pool = known[name];
  if (!pool) return generic;
  return fc.oneof(
    // Drawn lazily: the fixture exists only once the suite has set it up.
    { arbitrary: fc.constant(null).map(() => pool.real()), weight: 6 },
    { arbitrary: fc.constantFrom(...pool.nearMisses), weight: 2 },
    { arbitrary: generic, weight: 2 },
  );
}

/** A concrete path for a route pattern: `:name` (with an optional `{regex}` or `?`) and `*` filled in. */
function pathArb(pattern: string): fc.Arbitrary<string> {
  const parts = pattern.split("/").map((segment) => {
    const param = /^:(\w+)/.exec(segment);
    if (param) return paramArb(param[1] as string);
    if (segment === "*") return fc.webSegment();
    return fc.constant(segment);
  });
  return fc.tuple(...parts).map((segments) => segments.join("/") || "/");
}

const iso = (ms: number) => new Date(ms).toISOString();

/** A sale that POST /admin/sales accepts: open within the hour, for up to two days. */
const validSale = fc
  .record({
    name: fc.constantFrom("fuzzed drop", "  padded  ", "drop \u{1F45F}"),
    stock: fc.integer({ min: 1, max: 50 }),
    start: fc.integer({ min: -3_600_000, max: 3_600_000 }),
    length: fc.integer({ min: 60_000, max: 2 * 86_400_000 }),
    admission: fc.option(fc.record({ rate: fc.integer({ min: 1, max: 100 }), burst: fc.integer({ min: 1, max: 100 }) }), {
      nil: undefined,
    }),
  })
  .map(({ start, length, ...sale }) => ({
    ...sale,
    startsAt: iso(Date.now() + start),
    endsAt: iso(Date.now() + start + length),
  }));

/** A valid sale with one field made wrong: another type, out of range, a window from year 0 to 9999, an unknown key. */
const brokenSale = fc
  .tuple(
    validSale,
    fc.oneof(
      fc.record({ field: fc.constantFrom("name", "stock", "startsAt", "endsAt", "admission"), value: fc.jsonValue() }),
      fc.record({ field: fc.constant("stock"), value: fc.oneof(fc.integer(), fc.double(), fc.constant(1_000_001)) }),
      fc.record({ field: fc.constant("name"), value: fc.oneof(anyText, fc.constant(""), fc.constant("x".repeat(201))) }),
      fc.record({
        field: fc.constantFrom("startsAt", "endsAt"),
        value: fc.oneof(
          fc.integer({ min: -3 * 86_400_000, max: 400 * 86_400_000 }).map((d) => iso(Date.now() + d)),
          fc.constantFrom("0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "yesterday", ""),
        ),
      }),
      fc.record({
        field: fc.constant("admission"),
        value: fc.record({ rate: fc.integer(), burst: fc.integer(), extra: fc.jsonValue() }),
      }),
      fc.record({ field: fc.constantFrom("userId", "idSlot", "__proto__"), value: fc.jsonValue() }),
    ),
  )
  .map(([sale, { field, value }]) => ({ ...sale, [field]: value }));

const bodyArb: fc.Arbitrary<string | undefined> = fc.oneof(
  { arbitrary: fc.constant(undefined), weight: 5 },
  { arbitrary: fc.oneof(validSale, brokenSale).map((b) => JSON.stringify(b)), weight: 5 },
  {
    arbitrary: fc.record({ stock: fc.oneof(fc.integer({ min: 1, max: 20 }), fc.jsonValue()) }).map((b) => JSON.stringify(b)),
    weight: 1,
  },
  { arbitrary: fc.constantFrom("{}", '{"options":{}}', '{"userId":"someone-else"}'), weight: 1 },
  {
    arbitrary: fc
      .oneof(
        fc.record({ quantity: fc.oneof(fc.integer({ min: -1, max: 12 }), fc.jsonValue()) }),
        fc.record({
          paymentToken: fc.oneof(fc.constantFrom("tok_visa", "tok_chargeDeclined", "tok_unknown", ""), fc.jsonValue()),
        }),
      )
      .map((b) => JSON.stringify(b)),
    weight: 2,
  },
  { arbitrary: fc.json(), weight: 2 },
  { arbitrary: fc.string({ unit: "binary", maxLength: 200 }), weight: 1 },
  { arbitrary: fc.constantFrom("", "{", "[]", "null", '{"__proto__":{"admin":true}}', "x".repeat(17_000)), weight: 1 },
);

/** Admin paths take the admin token, every other route a user's: the fitting one, mostly. */
const isAdminPath = (path: string) => path.startsWith("/admin") || path.startsWith("/lab/sales");

/** Credentials: mostly the one the path takes, else the other one, forged, broken or garbage. */
const authorizationArb = (path: string): fc.Arbitrary<string | undefined> => {
  const admin = fc.constant(null).map(() => `Bearer ${env.ADMIN_TOKEN}`);
  const user = fc.nat(5).map((i) => `Bearer ${fixture.userTokens[i]}`);
  return fc.oneof(
    { arbitrary: isAdminPath(path) ? admin : user, weight: 8 },
    { arbitrary: isAdminPath(path) ? user : admin, weight: 1 },
    fc.constant(undefined),
    fc.nat(5).map((i) => `Bearer ${fixture.userTokens[i]}=`),
    fc.constantFrom("Bearer", "Basic YWRtaW46YWRtaW4=", `Bearer ${"a".repeat(5000)}`, "Bearer a.b.c", "bearer  x"),
    printable(80).map((s) => `Bearer ${s}`),
    printable(40),
  );
};

/** Signature headers as a rotating provider sends them: a timestamp and one to six v1= entries, none by our secret. */
const webhookSignatureArb = fc
  .tuple(
    fc.oneof(
      fc.constant(null).map(() => Math.floor(Date.now() / 1000)),
      fc.integer({ min: 0, max: 2 ** 40 }),
    ),
    fc.array(fc.stringMatching(/^[0-9a-f]{64}$/), { minLength: 1, maxLength: 6 }),
    fc.constantFrom(",", ", ", ",,"),
  )
  .map(([t, macs, separator]) => [`t=${t}`, ...macs.map((mac) => `v1=${mac}`)].join(separator));

/** Catalog cursors a client might make up: bare positions (as cursors once were), signed-looking ones, garbage. */
const forgedCursorArb = fc
  .oneof(
    fc.tuple(fc.nat(), fc.nat()).map(([at, id]) => `${at.toString(36)}_${id.toString(36)}`),
    fc
      .tuple(fc.nat(), fc.integer({ min: 1 }), fc.nat(), fc.stringMatching(/^[A-Za-z0-9_-]{43}$/))
      .map(([at, id, expiry, mac]) => `${at.toString(36)}_${id.toString(36)}.${(Date.now() + expiry).toString(36)}.${mac}`),
    anyText,
  )
  .map((cursor) => `cursor=${encodeURIComponent(cursor)}`);

const headersArb = (path: string) =>
  fc.record({
    Authorization: authorizationArb(path),
    "Content-Type": fc.oneof(
      { arbitrary: fc.constantFrom("application/json", "application/json; charset=utf-8"), weight: 8 },
      fc.constant(undefined),
      fc.constantFrom("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"),
      fc.constantFrom("application/vnd.api+json", "text/json", "application/json-patch"),
      printable(40),
    ),
    "Idempotency-Key": fc.oneof(
      { arbitrary: fc.constant(undefined), weight: 3 },
      fc.constantFrom("fuzz-key-1", "fuzz-key-2", ""),
      printable(250),
    ),
    "CF-Connecting-IP": fc.oneof({ arbitrary: fc.constant(undefined), weight: 2 }, fc.ipV4(), addressArb),
    "Webhook-Signature": fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, webhookSignatureArb),
    "Queue-Ticket": fc.oneof({ arbitrary: fc.constant(undefined), weight: 4 }, claimArb("qt1")),
    "Queue-Pass": fc.oneof({ arbitrary: fc.constant(undefined), weight: 4 }, claimArb("qp1")),
    "Human-Check": fc.oneof({ arbitrary: fc.constant(undefined), weight: 4 }, humanCheckArb),
    "If-Match": fc.oneof({ arbitrary: fc.constant(undefined), weight: 4 }, ifMatchArb),
    Accept: fc.constantFrom(undefined, "application/json", "text/html", "*/*"),
  });

/** A page parameter of some paged route (the catalog's cursor is drawn apart, in forgedCursorArb). */
const pageQueryArb = fc
  .tuple(fc.constantFrom("cursor", "limit", "status", "from"), pageTextArb)
  .map(([name, value]) => `${name}=${encodeURIComponent(value)}`);

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

const requestArb = fc
  .record({
    route: fc.constantFrom(...routes),
    otherMethod: fc.oneof({ arbitrary: fc.constant(undefined), weight: 7 }, fc.constantFrom(...METHODS)),
    body: bodyArb,
    query: fc.oneof({ arbitrary: fc.constant(undefined), weight: 4 }, fc.webQueryParameters(), forgedCursorArb, pageQueryArb),
  })
  .chain(({ route, otherMethod, body, query }) =>
    fc.tuple(pathArb(route.path), headersArb(route.path)).map(([path, headers]) => ({
      method: otherMethod ?? route.method,
      path: query ? `${path}?${query}` : path,
      headers: Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== undefined)) as Record<string, string>,
      body,
    })),
  );

// --- what every answer must hold ----------------------------------------------------------

/** A sale's report, on what settling does not change (settlement moves orders from pending to D1 meanwhile). */
async function saleState(saleId: string) {
  const r = await report(saleId);
  const { outbox: _outbox, ...redis } = r.redis;
  return { stock: r.stock, redis, accounted: r.d1.confirmed + r.d1.failed + r.pending, oversold: r.oversold };
}

/** What a refusal must leave as it was. */
async function state() {
  const [sale, lab, sales] = await Promise.all([
    saleState(fixture.saleId),
    through(
      new Request(`${ORIGIN}/lab/sales/${fixture.labSaleId}/report`, { headers: { Authorization: `Bearer ${env.ADMIN_TOKEN}` } }),
    ).then((res) => res.json<LabSaleReport>()),
    env.DB.prepare("SELECT COUNT(*) AS n FROM sales").first<number>("n"),
  ]);
  return { sale, lab, sales };
}

function expectErrorShape(status: number, contentType: string | null, text: string, what: string) {
  expect(contentType, what).toMatch(/^application\/json/);
  const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
  expect(Object.keys(body), what).toEqual(["error"]);
  expect(Object.keys(body.error ?? {}).sort(), what).toEqual(["code", "message"]);
  expect(body.error?.code, what).toMatch(/^[A-Z_]+$/);
  expect(typeof body.error?.message, what).toBe("string");
  expect(body.error?.message, what).not.toMatch(/\n\s+at |\.ts:\d+/);
  expect(status, what).toBeGreaterThanOrEqual(400);
}

describe("fuzzer", () => {
  it("finds every route of the app", () => {
    expect(routes.map((r) => `${r.method} ${r.path}`)).toEqual(
      expect.arrayContaining([
        "GET /healthz",
        "POST /api/sales/:saleId/checkout",
        "POST /admin/sales",
        "GET /api/orders/:orderId",
      ]),
    );
  });

  it(`holds the API's promises over ${RUNS} drawn requests (seed ${SEED})`, async () => {
    const hits = new Map<string, number>();
    let before = await state();
    await fc.assert(
      fc.asyncProperty(requestArb, async ({ method, path, headers, body }) => {
        const what = `${method} ${path} ${JSON.stringify(headers)} ${body?.slice(0, 200)}`;
        const req = new Request(`${ORIGIN}${path}`, {
          method,
          headers,
          body: method === "GET" || method === "HEAD" ? undefined : body,
        });
        const res = await through(req);
        const text = await res.text();
        hits.set(`${res.status}`, (hits.get(`${res.status}`) ?? 0) + 1);

        if (res.status >= 500) {
          expect(res.status, what).toBe(503);
          expect(res.headers.get("Retry-After"), what).toBeTruthy();
        }
        if (res.status >= 400 && method !== "HEAD") expectErrorShape(res.status, res.headers.get("Content-Type"), text, what);
        // No cursor is ever drawn that this API gave: each one is refused before any read.
        const url = new URL(req.url);
        if (method === "GET" && url.pathname === "/api/sales" && url.searchParams.has("cursor")) {
          expect(res.status, what).toBe(400);
        }
        const everything = `${text}\n${[...res.headers].map(([k, v]) => `${k}: ${v}`).join("\n")}`;
        for (const secret of fixture.secrets) expect(everything.includes(secret), `${what} leaks a secret`).toBe(false);

        const after = await state();
        if (res.status >= 400) expect(after, `${what} changed state (${res.status} ${text})`).toEqual(before);
        before = after;
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    // The draws reach accepted, refused and missing alike.
    expect([...hits.keys()]).toEqual(expect.arrayContaining(["200", "202", "400", "401", "404", "405", "409", "415"]));
  });
});

// --- every header, claim and cursor the API reads, on the routes that read it ---------------

/** The suite's env with the isolate's per-user buckets off: every draw reaches the reader, none is a 429 first. */
const readerEnv: Env = { ...env, USER_RATE_LIMIT: "0" };

/**
 * Requests through the Worker's fetch handler; the waitUntil work they leave (a refusal's
 * counters go out a second later) is awaited all together by `settled`, not one request at a time.
 */
function requests() {
  const contexts: ExecutionContext[] = [];
  return {
    async fetch(req: Request): Promise<Response> {
      const ctx = createExecutionContext();
      contexts.push(ctx);
      return worker.fetch(req, readerEnv, ctx);
    },
    settled: () => Promise.all(contexts.map((ctx) => waitOnExecutionContext(ctx))),
  };
}

const CLAIM_RUNS = 60;
const READER_RUNS = 40;

interface Reader {
  /** What is drawn: a header's name, or a query parameter's. */
  what: string;
  /** The route that reads it. */
  route: string;
  values: fc.Arbitrary<string>;
  /** The request with `value` in its place and everything else right. */
  request(value: string): Request;
  /** The one answer every drawn value gets, where the contract names it. */
  answer?: { status: number; code: string };
  runs?: number;
}

const buyer = () => ({ Authorization: `Bearer ${fixture.buyer.token}` });
/** A POST by the fixture's buyer, with `headers` beside their token. */
const buyerPost = (path: string, headers: Record<string, string>) =>
  new Request(at(path), { method: "POST", headers: { ...buyer(), ...headers } });
/** The admin renaming a sale, with `headers` in place of the usual ones. */
const renameSale = (saleId: string, headers: Record<string, string>) =>
  new Request(at(`/admin/sales/${saleId}`), { method: "PATCH", headers, body: JSON.stringify({ name: "edited by the fuzzer" }) });
const at = (path: string) => `${ORIGIN}${path}`;
const withQuery = (path: string, name: string, value: string) => at(`${path}?${name}=${encodeURIComponent(value)}`);

/** A payment event a provider could send (its signature is what is drawn). */
const paymentEvent = () =>
  JSON.stringify({ id: `evt-fuzz-${crypto.randomUUID()}`, orderId: fixture.orderId, status: "succeeded", paymentRef: "ch_fuzz" });

/** Tokens that are not a valid bearer: near misses of a genuine one, JWT-shaped segments of every length, any text. */
const malformedAuthorizationArb = fc.oneof(
  nearMiss(() => fixture.userTokens[1] as string).map((t) => `Bearer ${t}`),
  fc
    .tuple(
      fc.stringMatching(/^[A-Za-z0-9_=-]{0,40}$/),
      fc.stringMatching(/^[A-Za-z0-9_=-]{0,40}$/),
      fc.stringMatching(/^[A-Za-z0-9_=-]{0,45}$/),
    )
    .map((parts) => `Bearer ${parts.join(".")}`),
  fc.constantFrom(
    "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
    "Bearer eyJhbGciOiJIUzI1NiJ9.bnVsbA.AAAA",
    "Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6Im5vIn0.e30.AAAA",
    "Bearer bnVsbA.e30.AAAA",
    "Bearer A.B.C",
    "Bearer",
    "Basic YWRtaW46YWRtaW4=",
  ),
  printable(200),
);

const READERS: Reader[] = [
  {
    what: "Queue-Pass",
    route: "POST /api/sales/:saleId/checkout",
    values: claimArb("qp1"),
    request: (pass) => buyerPost(`/api/sales/${fixture.queuedSaleId}/checkout`, { "Queue-Pass": pass }),
    answer: { status: 403, code: "QUEUE_PASS_INVALID" },
    runs: CLAIM_RUNS,
  },
  {
    what: "Queue-Ticket",
    route: "GET /api/sales/:saleId/queue",
    values: claimArb("qt1"),
    request: (ticket) =>
      new Request(at(`/api/sales/${fixture.queuedSaleId}/queue`), { headers: { ...buyer(), "Queue-Ticket": ticket } }),
    answer: { status: 403, code: "QUEUE_TICKET_INVALID" },
    runs: CLAIM_RUNS,
  },
  {
    what: "Human-Check",
    route: "POST /api/sales/:saleId/queue",
    values: humanCheckArb,
    request: (token) => buyerPost(`/api/sales/${fixture.queuedSaleId}/queue`, { "Human-Check": token }),
  },
  {
    what: "Human-Check",
    route: "POST /api/sales/:saleId/checkout",
    values: humanCheckArb,
    request: (token) => buyerPost(`/api/sales/${fixture.humanSaleId}/checkout`, { "Human-Check": token }),
  },
  {
    what: "CF-Connecting-IP",
    route: "POST /api/sales/:saleId/queue",
    values: addressArb,
    request: (address) => buyerPost(`/api/sales/${fixture.queuedSaleId}/queue`, { "CF-Connecting-IP": address }),
  },
  {
    what: "Idempotency-Key",
    route: "POST /api/sales/:saleId/checkout",
    values: fc.oneof(fc.constantFrom("", "k", "k".repeat(200), "k".repeat(201)), printable(250)),
    request: (key) =>
      new Request(at(`/api/sales/${fixture.saleId}/checkout`), {
        method: "POST",
        headers: { Authorization: `Bearer ${fixture.userTokens[5]}`, "Idempotency-Key": key },
      }),
  },
  {
    what: "If-Match",
    route: "PATCH /admin/sales/:saleId",
    values: ifMatchArb,
    request: (etag) => renameSale(fixture.humanSaleId, { ...admin, "If-Match": etag }),
  },
  {
    what: "Content-Type",
    route: "PATCH /admin/sales/:saleId",
    values: fc.oneof(
      fc.constantFrom("application/json", "application/json; charset=utf-8", "application/JSON", "application/json;", "json", ""),
      printable(80),
    ),
    request: (type) => renameSale(fixture.humanSaleId, { Authorization: admin.Authorization, "Content-Type": type }),
  },
  {
    what: "Authorization",
    route: "GET /api/orders",
    values: malformedAuthorizationArb,
    request: (authorization) => new Request(at("/api/orders"), { headers: { Authorization: authorization } }),
    answer: { status: 401, code: "UNAUTHORIZED" },
  },
  {
    what: "Authorization",
    route: "GET /admin/webhooks",
    values: malformedAuthorizationArb,
    request: (authorization) => new Request(at("/admin/webhooks"), { headers: { Authorization: authorization } }),
    answer: { status: 401, code: "UNAUTHORIZED" },
  },
  {
    what: "Webhook-Signature",
    route: "POST /webhooks/payments",
    values: fc.oneof(
      webhookSignatureArb,
      fc.constantFrom("t=1", "v1=", "t=,v1=", `t=${"9".repeat(13)},v1=${"a".repeat(64)}`, `t=1,${"v1=00,".repeat(500)}`),
      fc.nat({ max: 10 }).map((n) => `t=${Math.floor(Date.now() / 1000)}${`,v1=${"A".repeat(64)}`.repeat(n)}`),
      printable(300),
    ),
    request: (signature) =>
      new Request(at("/webhooks/payments"), {
        method: "POST",
        headers: { "Content-Type": "application/json", "Webhook-Signature": signature },
        body: paymentEvent(),
      }),
    answer: { status: 401, code: "UNAUTHORIZED" },
  },
  {
    what: "cursor",
    route: "GET /api/sales",
    values: fc.oneof(
      pageTextArb,
      forgedCursorArb.map((q) => decodeURIComponent(q.slice("cursor=".length))),
    ),
    request: (cursor) => new Request(withQuery("/api/sales", "cursor", cursor)),
    answer: { status: 400, code: "INVALID_CURSOR" },
  },
  {
    what: "cursor",
    route: "GET /api/orders",
    values: pageTextArb,
    request: (cursor) => new Request(withQuery("/api/orders", "cursor", cursor), { headers: buyer() }),
  },
  {
    what: "cursor, limit and status",
    route: "GET /admin/sales/:saleId/orders",
    values: fc.tuple(fc.constantFrom("cursor", "limit", "status"), pageTextArb).map((pair) => pair.join("\n")),
    request: (pair) => {
      const [name, value] = pair.split("\n") as [string, string];
      return new Request(withQuery(`/admin/sales/${fixture.saleId}/orders`, name, value), { headers: admin });
    },
  },
  {
    what: "cursor",
    route: "GET /admin/webhooks/:id/deliveries",
    values: pageTextArb,
    request: (cursor) =>
      new Request(withQuery(`/admin/webhooks/${fixture.endpointId}/deliveries`, "cursor", cursor), { headers: admin }),
  },
  {
    what: "from",
    route: "GET /admin/sales/:saleId/queue/places",
    values: pageTextArb,
    request: (from) =>
      new Request(withQuery(`/admin/sales/${fixture.queuedSaleId}/queue/places`, "from", from), { headers: admin }),
  },
];

describe("every header, claim and cursor the API reads, malformed", () => {
  it("draws every header the routes read", () => {
    expect(new Set(READERS.map((r) => r.what))).toEqual(
      new Set([
        "Queue-Pass",
        "Queue-Ticket",
        "Human-Check",
        "CF-Connecting-IP",
        "Idempotency-Key",
        "If-Match",
        "Content-Type",
        "Authorization",
        "Webhook-Signature",
        "cursor",
        "cursor, limit and status",
        "from",
      ]),
    );
  });

  for (const reader of READERS) {
    const answer = reader.answer ? `always ${reader.answer.status} ${reader.answer.code}` : "never a 5xx";
    it(`${reader.what} on ${reader.route}: ${answer}, in the one error shape (seed ${SEED})`, async () => {
      const before = reader.answer && (await saleState(fixture.queuedSaleId));
      const sent = requests();
      await fc.assert(
        fc.asyncProperty(reader.values, async (value) => {
          const res = await sent.fetch(reader.request(value));
          const text = await res.text();
          const what = `${reader.route} with ${reader.what} ${JSON.stringify(value.slice(0, 200))}: ${res.status} ${text.slice(0, 300)}`;
          expect(res.status, what).toBeLessThan(500);
          if (res.status >= 400) expectErrorShape(res.status, res.headers.get("Content-Type"), text, what);
          if (reader.answer) {
            expect(res.status, what).toBe(reader.answer.status);
            expect((JSON.parse(text) as { error: { code: string } }).error.code, what).toBe(reader.answer.code);
          }
        }),
        { seed: SEED, numRuns: reader.runs ?? READER_RUNS, endOnFailure: true },
      );
      await sent.settled();
      // Refused every time: nothing changed.
      if (before) expect(await saleState(fixture.queuedSaleId)).toEqual(before);
    });
  }
});
