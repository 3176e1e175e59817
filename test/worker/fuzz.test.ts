// Property-based requests against every route of the app, taken from the app itself (routes
// added later are fuzzed without a change here), with methods, headers, tokens and bodies
// drawn by fast-check from a fixed seed. They run through the Worker's fetch handler against
// the real stack (redis-server behind the gateway, local D1 and Queues), with the lab on so
// its routes are reached too. Every answer must hold:
//   - no 5xx but 503 with Retry-After;
//   - every error in the one JSON shape, without a stack trace;
//   - a refusal changes nothing: the fixture sale's and lab sale's reports and the sales in D1;
//   - no token or secret in the answer, headers included.
import { env } from "cloudflare:test";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { app } from "../../src/app";
import type { LabSaleReport } from "../../src/shared/lab-types";
import { api, createSale, handleWithVars, report, userToken } from "./helpers";

const SEED = 20_261_125;
const RUNS = 300;
const ORIGIN = "https://flash.test";

/** Every method and path the app answers, from its own route table (middleware excluded). */
const routes = [...new Map(app.routes.filter((r) => r.method !== "ALL").map((r) => [`${r.method} ${r.path}`, r])).values()].map(
  ({ method, path }) => ({ method, path }),
);

/** A request through the Worker with the lab on. */
const through = (req: Request) => handleWithVars({ LAB_ENABLED: "true" }, req);

interface Fixture {
  saleId: string;
  orderId: string;
  labSaleId: string;
  userTokens: string[];
  /** Everything no answer may contain. */
  secrets: string[];
}
let fixture: Fixture;

beforeAll(async () => {
  const sale = await createSale({ stock: 40 });
  const userTokens = await Promise.all(Array.from({ length: 6 }, (_, i) => userToken(`fuzz-${sale.id}-${i}`)));
  const res = await api.checkoutResponse(sale.id, userTokens[0] as string);
  const { orderId } = (await res.json()) as { orderId: string };
  const lab = await through(
    new Request(`${ORIGIN}/lab/sales`, {
      method: "POST",
      headers: { Authorization: `Bearer ${env.ADMIN_TOKEN}`, "Content-Type": "application/json" },
      body: JSON.stringify({ stock: 10 }),
    }),
  );
  const { id: labSaleId } = (await lab.json()) as { id: string };
  fixture = {
    saleId: sale.id,
    orderId,
    labSaleId,
    userTokens,
    secrets: [env.ADMIN_TOKEN, env.JWT_SECRET, env.UPSTASH_REDIS_REST_TOKEN, env.PAYMENT_WEBHOOK_SECRET as string, ...userTokens],
  };
});

// --- what the fuzzer draws --------------------------------------------------------------

const printable = (maxLength: number) =>
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength });
const anyText = fc.string({ unit: "grapheme", maxLength: 40 });

/** A path parameter: mostly the fixture's real id, else a near miss or anything at all. */
function paramArb(name: string): fc.Arbitrary<string> {
  const known: Record<string, { real: () => string; nearMisses: string[] }> = {
    saleId: { real: () => fixture.saleId, nearMisses: ["1", "999999999", "9007199254740993", "0", "-1", "1e3", "%20"] },
    orderId: { real: () => fixture.orderId, nearMisses: ["1", "18446744073709551616", "9223372036854775807", "0x10"] },
    labSaleId: { real: () => fixture.labSaleId, nearMisses: ["00000000-0000-0000-0000-000000000000", "A".repeat(36)] },
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
    "CF-Connecting-IP": fc.option(fc.ipV4(), { nil: undefined }),
    "Webhook-Signature": fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, webhookSignatureArb),
    Accept: fc.constantFrom(undefined, "application/json", "text/html", "*/*"),
  });

const METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

const requestArb = fc
  .record({
    route: fc.constantFrom(...routes),
    otherMethod: fc.oneof({ arbitrary: fc.constant(undefined), weight: 7 }, fc.constantFrom(...METHODS)),
    body: bodyArb,
    query: fc.oneof({ arbitrary: fc.constant(undefined), weight: 4 }, fc.webQueryParameters(), forgedCursorArb),
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

/** What a refusal must leave as it was. Settlement moves orders from pending to D1 meanwhile, so the report is compared on what settling does not change. */
async function state() {
  const [r, lab, sales] = await Promise.all([
    report(fixture.saleId),
    through(
      new Request(`${ORIGIN}/lab/sales/${fixture.labSaleId}/report`, { headers: { Authorization: `Bearer ${env.ADMIN_TOKEN}` } }),
    ).then((res) => res.json<LabSaleReport>()),
    env.DB.prepare("SELECT COUNT(*) AS n FROM sales").first<number>("n"),
  ]);
  const { outbox: _outbox, ...redis } = r.redis;
  return {
    sale: { stock: r.stock, redis, accounted: r.d1.confirmed + r.d1.failed + r.pending, oversold: r.oversold },
    lab,
    sales,
  };
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
