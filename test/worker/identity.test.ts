import { env, SELF } from "cloudflare:test";
import { sign } from "hono/jwt";
import { describe, expect, it } from "vitest";
import { userIdFromAuthorization } from "../../src/http/auth";
import { ApiError } from "../../src/http/errors";
import { jwksKey } from "../../src/http/verification-keys";
import { bucketKeys, saleKeys } from "../../src/shared/keys";
import { MAX_USER_ID_LENGTH } from "../../src/shared/limits";
import { BASE, bearer, checkout, createSale, fetchWithVars, redis } from "./helpers";

// The JWT corpus: every token below goes through the Worker's own verification, inside
// workerd, with the real JWKS of the test identity provider (test/setup/identity-provider.ts).

const [rsaKey, ecKey] = env.TEST_SIGNING_KEYS as [SigningKey, SigningKey];
type SigningKey = (typeof env.TEST_SIGNING_KEYS)[number];
const now = () => Math.floor(Date.now() / 1000);

const utf8 = (text: string) => new TextEncoder().encode(text);
function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

/** A token exactly as given: header and payload JSON (raw text allowed), HMAC-SHA256 over them with `secret`. */
async function hs256Raw(header: object | string, payload: object | string, secret: string | Uint8Array = env.JWT_SECRET) {
  const part = (v: object | string) => base64url(utf8(typeof v === "string" ? v : JSON.stringify(v)));
  const signingInput = `${part(header)}.${part(payload)}`;
  const key = await crypto.subtle.importKey(
    "raw",
    typeof secret === "string" ? utf8(secret) : secret,
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return `${signingInput}.${base64url(new Uint8Array(await crypto.subtle.sign("HMAC", key, utf8(signingInput))))}`;
}

const claims = (extra: Record<string, unknown> = {}) => ({ sub: "corpus-user", iat: now(), exp: now() + 600, ...extra });
const hs256 = (extra: Record<string, unknown> = {}) => sign(claims(extra), env.JWT_SECRET, "HS256");
const withHeader = (token: string, header: object) =>
  [base64url(utf8(JSON.stringify(header))), ...token.split(".").slice(1)].join(".");

/** Changes the unused low bits of the signature's last character: same bytes, another spelling. */
function respellSignature(token: string): string {
  const [h, p, s] = token.split(".") as [string, string, string];
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const last = alphabet.indexOf(s[s.length - 1] as string);
  return `${h}.${p}.${s.slice(0, -1)}${alphabet[last ^ 1]}`;
}

type Expect = { userId: string } | { refused: RegExp } | { unavailable: true };
interface Row {
  name: string;
  token: () => Promise<string>;
  vars?: Partial<Env>;
  expect: Expect;
}

const accepted = (userId = "corpus-user"): Expect => ({ userId });
/** The identity provider as a shop must configure it before its JWKS tokens are accepted. */
const idp = { JWT_ISSUER: "https://id.shop.test", JWT_AUDIENCE: "flash-sale" };
const idpClaims = (extra: Record<string, unknown> = {}) => claims({ iss: idp.JWT_ISSUER, aud: idp.JWT_AUDIENCE, ...extra });
const refused = (message: RegExp): Expect => ({ refused: message });

const corpus: Row[] = [
  { name: "a valid HS256 token", token: () => hs256(), expect: accepted() },

  // alg none and alg confusion
  {
    name: "alg none, no signature",
    token: async () => `${(await hs256Raw({ alg: "none" }, claims())).split(".").slice(0, 2).join(".")}.`,
    expect: refused(/well-formed/),
  },
  {
    name: "alg none, with a signature",
    token: () => hs256Raw({ alg: "none", typ: "JWT" }, claims()),
    expect: refused(/signed with/),
  },
  {
    name: "alg HS512 with the right secret",
    token: () => sign(claims(), env.JWT_SECRET, "HS512"),
    expect: refused(/signed with HS256/),
  },
  {
    name: "HS256 signed with the RSA public key as its secret",
    token: async () =>
      hs256Raw({ alg: "HS256", typ: "JWT", kid: rsaKey.kid }, claims(), JSON.stringify({ kty: "RSA", n: rsaKey.n, e: rsaKey.e })),
    expect: refused(/invalid/),
  },
  {
    name: "HS256 signed with the RSA modulus bytes as its secret",
    token: async () => hs256Raw({ alg: "HS256", kid: rsaKey.kid }, claims(), utf8(rsaKey.n ?? "")),
    expect: refused(/invalid/),
  },
  // A provider's buyer is "idp:<sub>": its subs and the shop's own ids never name one buyer.
  {
    name: "RS256 from the shop's JWKS",
    token: () => sign(idpClaims(), rsaKey, "RS256"),
    vars: idp,
    expect: accepted("idp:corpus-user"),
  },
  {
    name: "ES256 from the shop's JWKS",
    token: () => sign(idpClaims(), ecKey, "ES256"),
    vars: idp,
    expect: accepted("idp:corpus-user"),
  },
  {
    name: "RS256 from the JWKS with no audience configured",
    token: () => sign(idpClaims(), rsaKey, "RS256"),
    vars: { JWT_ISSUER: idp.JWT_ISSUER },
    expect: refused(/issuer and audience are not configured/),
  },
  {
    name: "RS256 from the JWKS with no issuer configured",
    token: () => sign(idpClaims(), rsaKey, "RS256"),
    vars: { JWT_AUDIENCE: idp.JWT_AUDIENCE },
    expect: refused(/issuer and audience are not configured/),
  },
  {
    name: "an HS256 subject in the provider's id space",
    token: () => hs256({ sub: "idp:corpus-user" }),
    expect: refused(/may not start with idp:/),
  },
  {
    name: "HS256 while JWT_SECRET is shorter than 32 characters",
    token: () => sign(claims(), "short-but-right-secret", "HS256"),
    vars: { JWT_SECRET: "short-but-right-secret" },
    expect: refused(/JWT_SECRET is not usable/),
  },
  {
    name: "an ES256 key's token relabelled RS256 (alg pinned per key)",
    token: async () => withHeader(await sign(idpClaims(), ecKey, "ES256"), { alg: "RS256", typ: "JWT", kid: ecKey.kid }),
    vars: idp,
    expect: refused(/invalid/),
  },
  {
    name: "RS256 naming a kid the JWKS lacks",
    token: async () => withHeader(await sign(idpClaims(), rsaKey, "RS256"), { alg: "RS256", typ: "JWT", kid: "nobody" }),
    vars: idp,
    expect: refused(/signing key is unknown/),
  },
  {
    name: "RS256 without a kid",
    token: async () => withHeader(await sign(idpClaims(), rsaKey, "RS256"), { alg: "RS256", typ: "JWT" }),
    vars: idp,
    expect: refused(/no signing key/),
  },
  {
    name: "RS256 when no JWKS is configured",
    token: () => sign(claims(), rsaKey, "RS256"),
    vars: { JWT_JWKS_URL: "" },
    expect: refused(/signed with HS256$/),
  },
  // The isolate keeps the last header it read: a forged token with the very header it just kept is still refused.
  { name: "a valid HS256 token, just before a forged one", token: () => hs256(), expect: accepted() },
  { name: "a forged HS256 signature", token: () => sign(claims(), "another-secret", "HS256"), expect: refused(/invalid/) },
  { name: "a header with crit", token: () => hs256Raw({ alg: "HS256", crit: ["exp"] }, claims()), expect: refused(/invalid/) },
  { name: "a header that is not JSON", token: () => hs256Raw("{alg", claims()), expect: refused(/well-formed/) },
  { name: "a header of JSON null", token: () => hs256Raw("null", claims()), expect: refused(/well-formed/) },
  { name: "a header that is a number", token: () => hs256Raw("1", claims()), expect: refused(/well-formed/) },
  { name: "four segments", token: async () => `${await hs256()}.AAAA`, expect: refused(/well-formed/) },

  // one token, one spelling
  { name: "signature with = padding", token: async () => `${await hs256()}=`, expect: refused(/well-formed/) },
  { name: "signature with == padding", token: async () => `${await hs256()}==`, expect: refused(/well-formed/) },
  {
    name: "signature with non-zero unused bits",
    token: async () => respellSignature(await hs256()),
    expect: refused(/well-formed/),
  },
  {
    name: "payload in standard base64",
    token: async () => {
      const [h, p, s] = (await hs256({ sub: "???>>>" })).split(".");
      return `${h}.${p?.replace(/-/g, "+").replace(/_/g, "/")}.${s}`;
    },
    expect: refused(/well-formed/),
  },

  // subjects
  {
    name: "a lone high surrogate",
    token: () => hs256({ sub: "x\ud800" }),
    expect: refused(/subject is not well-formed Unicode/),
  },
  { name: "another lone high surrogate", token: () => hs256({ sub: "x\udbff" }), expect: refused(/not well-formed Unicode/) },
  { name: "a lone low surrogate", token: () => hs256({ sub: "\udc00x" }), expect: refused(/not well-formed Unicode/) },
  { name: "a surrogate pair (emoji)", token: () => hs256({ sub: "x\ud83d\ude00" }), expect: accepted("x\ud83d\ude00") },
  { name: "U+FFFD itself", token: () => hs256({ sub: "x\ufffd" }), expect: accepted("x\ufffd") },
  { name: "a newline", token: () => hs256({ sub: "eve\nadmin" }), expect: refused(/control characters/) },
  { name: "NUL", token: () => hs256({ sub: "eve\u0000" }), expect: refused(/control characters/) },
  { name: "DEL", token: () => hs256({ sub: "eve\u007f" }), expect: refused(/control characters/) },
  { name: "a line separator", token: () => hs256({ sub: "eve\u2028admin" }), expect: refused(/control characters/) },
  { name: "a paragraph separator", token: () => hs256({ sub: "eve\u2029" }), expect: refused(/control characters/) },
  { name: "only whitespace", token: () => hs256({ sub: " \t " }), expect: refused(/blank/) },
  { name: "empty", token: () => hs256({ sub: "" }), expect: refused(/blank/) },
  {
    name: "the longest subject",
    token: () => hs256({ sub: "u".repeat(MAX_USER_ID_LENGTH) }),
    expect: accepted("u".repeat(MAX_USER_ID_LENGTH)),
  },
  {
    name: "one character too long",
    token: () => hs256({ sub: "u".repeat(MAX_USER_ID_LENGTH + 1) }),
    expect: refused(/longer than/),
  },
  { name: "a numeric subject", token: () => hs256({ sub: 42 }), expect: refused(/no subject/) },
  { name: "no subject", token: () => hs256({ sub: undefined }), expect: refused(/no subject/) },

  // clock skew (default 30 s)
  { name: "issued 1 s in the future", token: () => hs256({ iat: now() + 1 }), expect: accepted() },
  { name: "issued 25 s in the future", token: () => hs256({ iat: now() + 25 }), expect: accepted() },
  { name: "issued 60 s in the future", token: () => hs256({ iat: now() + 60 }), expect: refused(/issued in the future/) },
  { name: "valid from 20 s from now", token: () => hs256({ nbf: now() + 20 }), expect: accepted() },
  { name: "valid from 60 s from now", token: () => hs256({ nbf: now() + 60 }), expect: refused(/not valid yet/) },
  { name: "expired 10 s ago", token: () => hs256({ exp: now() - 10 }), expect: accepted() },
  { name: "expired 60 s ago", token: () => hs256({ exp: now() - 60 }), expect: refused(/expired/) },
  {
    // 20 s: what the default skew allows, and what a busy machine cannot let pass between
    // signing and verifying (a token 1 s ahead was 1 s behind by then on one busy run).
    name: "issued 20 s ahead with no skew allowed",
    token: () => hs256({ iat: now() + 20 }),
    vars: { JWT_CLOCK_SKEW_SEC: "0" },
    expect: refused(/future/),
  },
  { name: "an nbf that is not a number", token: () => hs256({ nbf: "now" }), expect: refused(/not valid yet/) },

  // lifetimes (default at most 24 h)
  { name: "expires in 24 h", token: () => hs256({ exp: now() + 86_400 }), expect: accepted() },
  { name: "expires in 25 h", token: () => hs256({ exp: now() + 90_000 }), expect: refused(/must expire within 86400 seconds/) },
  { name: "expires in 1e308 s", token: () => hs256({ exp: 1e308 }), expect: refused(/must expire within/) },
  {
    name: "an expiry beyond doubles",
    token: () => hs256Raw({ alg: "HS256" }, `{"sub":"a","exp":1e400}`),
    expect: refused(/not a number/),
  },
  { name: "an expiry as text", token: () => hs256({ exp: String(now() + 60) }), expect: refused(/not a number/) },
  { name: "no expiry", token: () => hs256({ exp: undefined }), expect: refused(/no expiry/) },
  {
    name: "1 h with JWT_MAX_TTL_SEC=60",
    token: () => hs256(),
    vars: { JWT_MAX_TTL_SEC: "60" },
    expect: refused(/within 60 seconds/),
  },

  // issuer and audience
  ...((): Row[] => {
    const vars = { JWT_ISSUER: "https://id.shop.test", JWT_AUDIENCE: "flash-sale" };
    return [
      { name: "right iss and aud", token: () => hs256({ iss: vars.JWT_ISSUER, aud: "flash-sale" }), vars, expect: accepted() },
      {
        name: "aud as a list",
        token: () => hs256({ iss: vars.JWT_ISSUER, aud: ["shop", "flash-sale"] }),
        vars,
        expect: accepted(),
      },
      { name: "no iss", token: () => hs256({ aud: "flash-sale" }), vars, expect: refused(/issuer/) },
      {
        name: "another iss",
        token: () => hs256({ iss: "https://evil.test", aud: "flash-sale" }),
        vars,
        expect: refused(/issuer/),
      },
      { name: "no aud", token: () => hs256({ iss: vars.JWT_ISSUER }), vars, expect: refused(/audience/) },
      { name: "another aud", token: () => hs256({ iss: vars.JWT_ISSUER, aud: "shop" }), vars, expect: refused(/audience/) },
      {
        name: "RS256 with right iss and aud",
        token: () => sign(claims({ iss: vars.JWT_ISSUER, aud: "flash-sale" }), rsaKey, "RS256"),
        vars,
        expect: accepted("idp:corpus-user"),
      },
    ];
  })(),
];

describe("JWT corpus", () => {
  it.each(corpus)("$name", async ({ token, vars, expect: outcome }) => {
    const verdict = userIdFromAuthorization(`Bearer ${await token()}`, { ...env, ...vars });
    if ("userId" in outcome) {
      await expect(verdict).resolves.toBe(outcome.userId);
    } else {
      const err = await verdict.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ApiError);
      expect(err).toMatchObject({ status: 401, code: "UNAUTHORIZED" });
      if ("refused" in outcome) expect((err as ApiError).message).toMatch(outcome.refused);
    }
  });
});

/** How often the test identity provider has served its JWKS. */
const jwksFetches = async () => Number(await (await fetch(env.JWT_JWKS_URL.replace("/jwks.json", "/fetches"))).text());

describe("identity through the API", () => {
  it("keeps subjects that Redis would merge apart: a lone surrogate is refused, U+FFFD buys alone", async () => {
    const sale = await createSale({ stock: 5 });
    const first = await checkout(sale.id, await hs256({ sub: "x\ufffd" }));
    expect(first.status).toBe(202);
    for (const sub of ["x\ud800", "x\udbff"]) {
      const res = await checkout(sale.id, await hs256({ sub }));
      expect(res.status, JSON.stringify(sub)).toBe(401);
      expect(await res.json()).toEqual({
        error: { code: "UNAUTHORIZED", message: "the token's subject is not well-formed Unicode" },
      });
    }
    expect(await redis.hget(saleKeys(sale.id).meta, "remaining")).toBe("4");
    expect(await redis.hlen(bucketKeys(sale.id, 0, 1).buyers)).toBe(1);
  });

  it("accepts a token issued a second ahead of this clock at drop time", async () => {
    const sale = await createSale({ stock: 1 });
    expect((await checkout(sale.id, await hs256({ sub: "fast-clock", iat: now() + 1 }))).status).toBe(202);
  });

  it("fetches a JWKS once for concurrent first uses, each getting its pinned key", async () => {
    const url = `${env.JWT_JWKS_URL}?fresh=${crypto.randomUUID()}`;
    const before = await jwksFetches();
    const keys = await Promise.all(Array.from({ length: 20 }, (_, i) => jwksKey(url, i % 2 ? rsaKey.kid : ecKey.kid)));
    expect(keys.map((k) => k?.alg)).toEqual(Array.from({ length: 20 }, (_, i) => (i % 2 ? "RS256" : "ES256")));
    expect(await jwksFetches()).toBe(before + 1);
  });

  it("refuses the provider's tokens on every user route while JWT_AUDIENCE is empty", async () => {
    const sale = await createSale({ stock: 2 });
    const shopBuyer = await checkout(sale.id, await hs256({ sub: "shared-name" }));
    expect(shopBuyer.status).toBe(202);
    const { orderId } = (await shopBuyer.json()) as { orderId: string };
    const provider = bearer(await sign(idpClaims(), rsaKey, "RS256"));
    const json = { ...provider, "Content-Type": "application/json", "Idempotency-Key": crypto.randomUUID() };
    const answers = await Promise.all([
      SELF.fetch(`${BASE}/api/sales/${sale.id}/checkout`, { method: "POST", headers: provider }),
      SELF.fetch(`${BASE}/api/orders/${orderId}`, { headers: provider }),
      SELF.fetch(`${BASE}/api/orders/${orderId}/pay`, { method: "POST", headers: json, body: '{"paymentToken":"tok_visa"}' }),
      SELF.fetch(`${BASE}/api/orders/${orderId}/cancel`, { method: "POST", headers: provider }),
    ]);
    expect(answers.map((r) => r.status)).toEqual([401, 401, 401, 401]);
    expect(await redis.hget(saleKeys(sale.id).meta, "remaining")).toBe("1");
  });

  it("never lets a provider's sub name one of the shop's buyers", async () => {
    const sale = await createSale({ stock: 2 });
    const shopBuyer = await checkout(sale.id, await hs256({ sub: "shared-name" }));
    const { orderId } = (await shopBuyer.json()) as { orderId: string };
    const provider = bearer(await sign(idpClaims({ sub: "shared-name" }), rsaKey, "RS256"));
    const read = await fetchWithVars(idp, `/api/orders/${orderId}`, { headers: provider });
    expect(read.status).toBe(404);
    const own = await fetchWithVars(idp, `/api/sales/${sale.id}/checkout`, { method: "POST", headers: provider });
    expect(own.status).toBe(202); // a second buyer, not the shop's "shared-name" buying again
    expect(await redis.hlen(bucketKeys(sale.id, 0, 1).buyers)).toBe(2);
  });

  it("accepts the shop's RS256 tokens and fetches its JWKS once per isolate, not per request", async () => {
    const fetches = jwksFetches;
    const sale = await createSale({ stock: 20 });
    const checkoutAs = (token: string) =>
      fetchWithVars(idp, `/api/sales/${sale.id}/checkout`, { method: "POST", headers: bearer(token) });
    await checkoutAs(await sign(idpClaims({ sub: "rsa-warmup" }), rsaKey, "RS256"));
    const before = await fetches();
    const statuses = [];
    for (let i = 0; i < 10; i++) {
      const token = await sign(idpClaims({ sub: `rsa-buyer-${i}` }), i % 2 ? rsaKey : ecKey, i % 2 ? "RS256" : "ES256");
      statuses.push((await checkoutAs(token)).status);
    }
    expect(statuses).toEqual(Array(10).fill(202));
    expect(await fetches()).toBe(before);
  });
});
