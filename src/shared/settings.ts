// Every setting of the Worker, once: its type, default, what it accepts and what it does.
// `settingsOf(env)` reads them from the Worker's env once per env object (an isolate's, as a
// rule) into one typed object, which routes and domain code are handed; nothing else reads a
// setting from env (bindings such as D1, Queues and assets are not settings). A value that does
// not parse is refused by name, never replaced by its default. wrangler.toml's [vars] and
// docs/configuration.md are generated from this table (`npm run generate`; a test fails when
// they are stale).
import * as z from "zod/mini";
import { ORDER_ID_KEY_PATTERN } from "./public-order-id";

/** How one setting's text is read. */
interface Setting<T> {
  /** "var": wrangler.toml's [vars]; "secret": `wrangler secret put` (`.dev.vars` locally). */
  kind: "var" | "secret";
  /** Its value when unset or empty: the text wrangler.toml's [vars] carries. */
  fallback: string;
  /** What it accepts, as the refusal and the docs say it. */
  accepts: string;
  /** The value of `text` (never empty), or undefined when it does not parse. */
  read(text: string): T | undefined;
  /** Its value when unset or empty and `fallback` is empty too. */
  unset: T;
}

/** A whole number in [min, max], written in decimal digits. */
function wholeNumber(min: number, max: number, fallback: number, unit = ""): Setting<number> {
  return {
    kind: "var",
    fallback: String(fallback),
    accepts: `a whole number from ${min} to ${max}${unit}`,
    read: (text) => {
      const n = /^\d{1,16}$/.test(text) ? Number(text) : Number.NaN;
      return n >= min && n <= max ? n : undefined;
    },
    unset: fallback,
  };
}

const flag = (fallback: boolean): Setting<boolean> => ({
  kind: "var",
  fallback: String(fallback),
  accepts: '"true" or "false"',
  read: (text) => (text === "true" ? true : text === "false" ? false : undefined),
  unset: fallback,
});

/** Free text; empty means unset. */
const text = (kind: "var" | "secret" = "var"): Setting<string | undefined> => ({
  kind,
  fallback: "",
  accepts: "any text",
  read: (value) => value,
  unset: undefined,
});

const HttpUrl = z.url({ protocol: /^https?$/ });
/** An http(s) URL; empty means unset unless `fallback` says otherwise. */
const url = (fallback = "", kind: "var" | "secret" = "var"): Setting<string | undefined> => ({
  kind,
  fallback,
  accepts: "an http or https URL",
  read: (value) => (z.safeParse(HttpUrl, value).success ? value : undefined),
  unset: undefined,
});

function oneOf<const T extends string>(values: readonly T[], fallback: NoInfer<T>): Setting<T> {
  return {
    kind: "var",
    fallback,
    accepts: values.map((v) => (v === "" ? "empty" : `"${v}"`)).join(" or "),
    read: (value) => values.find((v) => v === value),
    unset: fallback,
  };
}

/** A comma-separated list, each item tidied by `tidy` and then checked against `Item`; empty: none. */
function commaList(Item: z.ZodMiniType<string>, accepts: string, tidy: (item: string) => string): Setting<string[]> {
  return {
    kind: "var",
    fallback: "",
    accepts,
    read: (value) => {
      const list = value
        .split(",")
        .map((item) => tidy(item.trim()))
        .filter((item) => item !== "");
      return list.every((item) => z.safeParse(Item, item).success) ? list : undefined;
    },
    unset: [],
  };
}

/** Origins such as https://shop.example, comma-separated; a trailing slash is dropped. */
const Origin = z.string().check(z.regex(/^https?:\/\/[^/\s,*]+$/));
const origins = commaList(Origin, "origins such as https://shop.example, comma-separated", (o) => o.replace(/\/+$/, ""));

const secret = () => text("secret");

/** ORDER_ID_KEY: an AES-256 key in hex; unset, what shows an order id answers 503. */
const orderIdKey: Setting<string | undefined> = {
  kind: "secret",
  fallback: "",
  accepts: "64 hex digits (openssl rand -hex 32)",
  read: (value) => (ORDER_ID_KEY_PATTERN.test(value) ? value : undefined),
  unset: undefined,
};

/** The shortest shared secret accepted: 32 characters, as `openssl rand -base64 32` gives 44. */
export const MIN_SECRET_LENGTH = 32;
/**
 * A shared secret (ADMIN_TOKEN, JWT_SECRET): used only when long enough to resist a guess.
 * Checked where it is used (src/http/secrets.ts), so a short one turns off what needs it, not
 * the whole Worker.
 */
const sharedSecret = (): Setting<string | undefined> => ({
  ...secret(),
  accepts: `at least ${MIN_SECRET_LENGTH} characters (shorter: what needs it answers 503)`,
});

/** A host name as siteverify reports it: letters, digits, dots and hyphens. */
const Hostname = z.string().check(z.regex(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/));
/** Host names such as shop.example, comma-separated, compared without case. */
const hostnames = commaList(Hostname, "host names such as shop.example, comma-separated", (h) => h.toLowerCase());

/** An AES-256 key's bytes: the setting's text, 32 bytes in base64. */
export const SECRETS_KEY_BYTES = 32;
/** A key for AES-256-GCM, written as `openssl rand -base64 32` writes one. */
const aesKey: Setting<Uint8Array | undefined> = {
  kind: "secret",
  fallback: "",
  accepts: `${SECRETS_KEY_BYTES} random bytes in base64 (openssl rand -base64 ${SECRETS_KEY_BYTES})`,
  read: (value) => {
    let bytes: Uint8Array;
    try {
      bytes = Uint8Array.from(atob(value), (c) => c.charCodeAt(0));
    } catch {
      return undefined;
    }
    return bytes.length === SECRETS_KEY_BYTES ? bytes : undefined;
  },
  unset: undefined,
};

/** The independent databases of quorum locks, as Upstash URL/token pairs. */
const QuorumNodes = z.array(z.object({ url: HttpUrl, token: z.string().check(z.minLength(1)) })).check(z.minLength(1));
export type QuorumNode = z.infer<typeof QuorumNodes>[number];
const quorumNodes: Setting<QuorumNode[] | undefined> = {
  kind: "secret",
  fallback: "",
  accepts: 'JSON [{"url": "…", "token": "…"}, …]',
  read: (value) => {
    try {
      const parsed = z.safeParse(QuorumNodes, JSON.parse(value));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  },
  unset: undefined,
};

const PER_MINUTE = " a minute";
/** A global allowance a minute that "0" turns off. */
const perMinuteOrOff = (fallback: number) => wholeNumber(0, 1_000_000, fallback, `${PER_MINUTE}; 0: off`);
/** A global allowance a minute that is always on. */
const perMinute = (fallback: number) => wholeNumber(1, 1_000_000, fallback, PER_MINUTE);
const ms = (min: number, max: number, fallback: number) => wholeNumber(min, max, fallback, " (ms)");

/** Cloudflare's siteverify: TURNSTILE_VERIFY_URL points elsewhere only for the local stand-in. */
export const SITEVERIFY_URL = "https://challenges.cloudflare.com/turnstile/v0/siteverify";

/** The table. The order is wrangler.toml's and the docs'. */
export const SETTINGS = {
  UPSTASH_REDIS_REST_URL: url("", "secret"),
  UPSTASH_REDIS_REST_TOKEN: secret(),
  ADMIN_TOKEN: sharedSecret(),
  JWT_SECRET: sharedSecret(),
  ORDER_ID_KEY: orderIdKey,
  REDIS_TIMEOUT_MS: ms(1, 60_000, 1_500),
  REDIS_MAX_RECORD_BYTES: wholeNumber(1, 1e12, 100_000_000, " (bytes)"),
  REDIS_MAX_REQUEST_BYTES: wholeNumber(1, 1e12, 10_000_000, " (bytes)"),
  RESTORE_QUIET_MS: ms(0, 3_600_000, 30_000),
  OUTBOX_REDRIVE_AFTER_MS: ms(0, 86_400_000, 30_000),
  IP_RATE_LIMIT: wholeNumber(0, 1_000_000, 20, " a second; 0: off"),
  USER_RATE_LIMIT: wholeNumber(0, 1_000_000, 5, " a second; 0: off"),
  LAB_ENABLED: flag(false),
  ALLOWED_ORIGINS: origins,
  DEV_LOGIN: flag(false),
  LOOPBACK_HOSTS_ONLY: flag(false),
  PAYMENT_PROVIDER: oneOf(["", "dev"], ""),
  PAYMENT_TIMEOUT_MS: ms(1, 120_000, 10_000),
  PAYMENT_WEBHOOK_SECRET: secret(),
  PAYMENT_WEBHOOK_SECRET_PREVIOUS: secret(),
  ORDER_EVENT_SECRETS_KEY: aesKey,
  JWT_CLOCK_SKEW_SEC: wholeNumber(0, 3_600, 30, " (s)"),
  JWT_MAX_TTL_SEC: wholeNumber(1, 31_536_000, 86_400, " (s)"),
  JWT_ISSUER: text(),
  JWT_AUDIENCE: text(),
  JWT_JWKS_URL: url(),
  ADMIN_AUTH_FAILURES_PER_MIN: perMinute(10),
  WEBHOOK_RATE_PER_MIN: perMinute(600),
  QUEUE_JOINS_PER_USER_PER_MIN: perMinuteOrOff(10),
  QUEUE_JOINS_PER_IP_PER_MIN: perMinuteOrOff(120),
  QUEUE_NO_SHOW_GRACE_SEC: wholeNumber(1, 3_600, 30, " (s)"),
  DRAW_ENTRIES_PER_USER_PER_MIN: perMinuteOrOff(10),
  DRAW_ENTRIES_PER_IP_PER_MIN: perMinuteOrOff(120),
  ACCESS_CODE_FAILURES_PER_USER_PER_MIN: perMinuteOrOff(10),
  ACCESS_CODE_FAILURES_PER_IP_PER_MIN: perMinuteOrOff(30),
  DEV_LOGINS_PER_USER_PER_MIN: perMinuteOrOff(10),
  DEV_LOGINS_PER_IP_PER_MIN: perMinuteOrOff(120),
  ORDER_CHANGES_PER_USER_PER_MIN: perMinuteOrOff(20),
  ORDER_CHANGES_PER_IP_PER_MIN: perMinuteOrOff(240),
  ORDER_READS_PER_USER_PER_MIN: perMinuteOrOff(300),
  ORDER_READS_PER_IP_PER_MIN: perMinuteOrOff(1_200),
  ACCOUNTS_PER_ADDRESS: wholeNumber(0, 1_000, 0, "; 0: off"),
  ADDRESS_PREFIX_V6: wholeNumber(1, 128, 64, " (bits)"),
  TURNSTILE_SECRET_KEY: secret(),
  TURNSTILE_SITE_KEY: text(),
  TURNSTILE_VERIFY_URL: url(SITEVERIFY_URL),
  TURNSTILE_HOSTNAMES: hostnames,
  LOCK_QUORUM_NODES: quorumNodes,
  ANALYTICS_ACCOUNT_ID: text(),
  ANALYTICS_API_TOKEN: secret(),
  ANALYTICS_STAND_IN_URL: url(),
} as const satisfies Record<string, Setting<unknown>>;

export type SettingName = keyof typeof SETTINGS;
/** The Worker's settings, parsed. */
export type Settings = { readonly [K in SettingName]: (typeof SETTINGS)[K] extends Setting<infer T> ? T : never };

/**
 * What each setting does, for the docs (docs/configuration.md, wrangler.toml's comments): one
 * line each. Only the generator reads this; the Worker's bundle leaves it out.
 */
export const SETTING_DOCS: Record<SettingName, string> = {
  UPSTASH_REDIS_REST_URL: "the Upstash Redis database's REST URL (npm start: its local gateway)",
  UPSTASH_REDIS_REST_TOKEN: "the Upstash Redis database's REST token",
  ADMIN_TOKEN: "the admin routes' bearer token (npm start: random, kept in .state/)",
  JWT_SECRET:
    "verifies the shop's HS256 user tokens and signs waiting-room tickets and catalog cursors (npm start: random, kept in .state/)",
  ORDER_ID_KEY:
    "the key of the order ids people see (a keyed permutation of the internal ones, which tell when an order was made): set it once and never change it, or every order id handed out names another order; unset, checkout and every route that shows an order answer 503 (npm start: random, kept in .state/)",
  REDIS_TIMEOUT_MS: "how long one Upstash request may take before checkout fails closed with 503",
  REDIS_MAX_RECORD_BYTES:
    "the Upstash database's limit on one record (a key's whole value); the report warns when a sale's largest key passes half of it; npm start's gateway enforces it",
  REDIS_MAX_REQUEST_BYTES: "the Upstash database's limit on one request; npm start's gateway enforces it",
  RESTORE_QUIET_MS:
    "a rebuild of a sale Redis lost waits until every order id reported minted before the loss has reached D1; when nobody reported one, until no order of the sale has reached D1 for this long",
  OUTBOX_REDRIVE_AFTER_MS: "outbox records older than this are re-sent to the queue by the scheduled handler",
  IP_RATE_LIMIT:
    "requests per isolate per client address (CF-Connecting-IP; an IPv6 one by its ADDRESS_PREFIX_V6 prefix) on the public API, burst 2x; requests without CF-Connecting-IP, which only a Worker run off Cloudflare sees, share one bucket",
  USER_RATE_LIMIT: "requests per isolate per signed-in user on the public API, burst 2x",
  LAB_ENABLED: "the oversell lab's routes (/lab/*); keep off in production",
  ALLOWED_ORIGINS:
    "shops whose pages may call /api/* from another origin; empty: same origin only; admin routes are never cross-origin",
  DEV_LOGIN:
    "POST /api/dev/login mints a user token for any name (the storefront's local sign-in), on a loopback Host only; npm start sets it, never in production",
  LOOPBACK_HOSTS_ONLY:
    "refuse requests whose Host is not a loopback name (DNS rebinding); also opens POST /admin/scheduled, the cron on demand; npm start sets it",
  PAYMENT_PROVIDER:
    'who charges buyers: "dev" (test tokens tok_visa, tok_chargeDeclined, tok_timeout; acts on a loopback Host only) or empty, which turns the pay route off (404)',
  PAYMENT_TIMEOUT_MS:
    "how long the pay route waits for the provider before answering 503 (a retry with the same Idempotency-Key is never charged twice)",
  PAYMENT_WEBHOOK_SECRET: "verifies POST /webhooks/payments (HMAC-SHA256); unset turns the route off (404)",
  PAYMENT_WEBHOOK_SECRET_PREVIOUS:
    "during a rotation of the provider's signing secret, the one it replaces: a signature by either passes",
  ORDER_EVENT_SECRETS_KEY:
    "encrypts the order events' endpoint signing secrets in D1 (AES-256-GCM), so a copy of the database holds none; unset: endpoints cannot be registered nor their secrets rotated (503), and deliveries signed with an encrypted secret fail until it is set again; a new key makes the secrets sealed with the old one unreadable: rotate each endpoint's secret then (npm start: random, kept in .state/)",
  JWT_CLOCK_SKEW_SEC: "clock difference allowed on a user token's exp, nbf and iat",
  JWT_MAX_TTL_SEC: "the longest a user token may still be valid (exp - now)",
  JWT_ISSUER: "when set, a user token's iss must equal it; required (with JWT_AUDIENCE) before any JWKS token is accepted",
  JWT_AUDIENCE: "when set, a user token's aud must contain it; required (with JWT_ISSUER) before any JWKS token is accepted",
  JWT_JWKS_URL:
    "an identity provider's JWKS: RS256 and ES256 tokens are accepted too, verified with the key their kid names; empty: HS256 only",
  ADMIN_AUTH_FAILURES_PER_MIN:
    "failed admin sign-ins per client address, counted in Redis across isolates; beyond it 429 (even for the right token from that address)",
  WEBHOOK_RATE_PER_MIN: "payment webhook deliveries per client address, across isolates",
  QUEUE_JOINS_PER_USER_PER_MIN: "waiting-room joins per user, across isolates",
  QUEUE_JOINS_PER_IP_PER_MIN: "waiting-room joins per client address, across isolates",
  QUEUE_NO_SHOW_GRACE_SEC:
    "a buyer let in from a waiting room who has not checked out this long after is counted a no-show: their pass no longer holds a unit back, and the next place is let in (they may still buy while their pass lasts, if a unit is left)",
  DRAW_ENTRIES_PER_USER_PER_MIN: "draw entries, changes and withdrawals per user, across isolates",
  DRAW_ENTRIES_PER_IP_PER_MIN: "draw entries, changes and withdrawals per client address, across isolates",
  ACCESS_CODE_FAILURES_PER_USER_PER_MIN:
    "access codes refused as invalid per user, across isolates; past it, checkouts with a code are refused 429 until the window moves on",
  ACCESS_CODE_FAILURES_PER_IP_PER_MIN: "access codes refused as invalid per client address, across isolates; likewise",
  DEV_LOGINS_PER_USER_PER_MIN: "dev logins per name asked for, across isolates",
  DEV_LOGINS_PER_IP_PER_MIN: "dev logins per client address, across isolates",
  ORDER_CHANGES_PER_USER_PER_MIN: "pay and cancel (together) per user, across isolates",
  ORDER_CHANGES_PER_IP_PER_MIN: "pay and cancel (together) per client address, across isolates",
  ORDER_READS_PER_USER_PER_MIN: "GET /api/orders and GET /api/orders/:orderId (together) per user, across isolates",
  ORDER_READS_PER_IP_PER_MIN: "GET /api/orders and GET /api/orders/:orderId (together) per client address, across isolates",
  ACCOUNTS_PER_ADDRESS:
    "one account, one seat: user ids one client address may bring to one sale's waiting room; the ones beyond get quiet tickets, except on a sale with humanCheck, where the check decides instead",
  ADDRESS_PREFIX_V6:
    "every per-address control (the limits, ACCOUNTS_PER_ADDRESS, ip deny rules, the admin sign-in limit) counts an IPv6 caller by its prefix of this many bits, since its host holds the whole prefix; IPv4 callers by their address",
  TURNSTILE_SECRET_KEY:
    "verifies Human-Check tokens of sales with humanCheck; unset refuses every token; Cloudflare's published test secrets are refused unless LOOPBACK_HOSTS_ONLY (npm start: the always-passing one)",
  TURNSTILE_SITE_KEY: "the Turnstile widget's site key the storefront renders (public); empty: GET /api/config says null",
  TURNSTILE_VERIFY_URL: "Turnstile's siteverify; npm start and the tests point it at the local stand-in",
  TURNSTILE_HOSTNAMES:
    "the shop's host names a Turnstile token must have been solved on (siteverify's hostname); empty: any host name under LOOPBACK_HOSTS_ONLY, every token refused otherwise",
  LOCK_QUORUM_NODES:
    "the lab's redlock strategy: one Upstash REST URL/token pair per independent database (3 or more); without it redlock answers 503",
  ANALYTICS_ACCOUNT_ID:
    "the Cloudflare account whose Workers Analytics Engine holds the funnel (the FUNNEL binding's dataset), which the console's funnel charts query over the SQL API; unset (or ANALYTICS_API_TOKEN unset): the funnel routes answer 503 ANALYTICS_UNAVAILABLE, while data points are written all the same",
  ANALYTICS_API_TOKEN: "an API token of ANALYTICS_ACCOUNT_ID with Account Analytics Read, for the funnel's SQL queries",
  ANALYTICS_STAND_IN_URL:
    "the local stand-in of Analytics Engine: every data point is posted to it as well and the funnel's SQL is asked of it instead of the SQL API; npm start and the tests set it, never in production",
};

/** A setting that does not parse: every request that needs the settings is refused until it is fixed. */
export class SettingsRefused extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.join("; "));
  }
}

/** `env`'s settings, parsed; throws SettingsRefused naming every setting that does not parse. */
export function parseSettings(env: Readonly<Record<string, unknown>>): Settings {
  const settings: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, setting] of Object.entries(SETTINGS) as [SettingName, Setting<unknown>][]) {
    const raw = env[name];
    const value = typeof raw === "string" && raw !== "" ? raw : setting.fallback;
    if (value === "") {
      settings[name] = setting.unset;
      continue;
    }
    const read = setting.read(value);
    if (read === undefined) {
      const shown = setting.kind === "secret" ? "" : ` (it is ${JSON.stringify(value)})`;
      problems.push(`${name} must be ${setting.accepts}${shown}`);
    }
    settings[name] = read;
  }
  if (problems.length > 0) throw new SettingsRefused(problems);
  return Object.freeze(settings) as Settings;
}

/** The last env parsed and its settings: every request of an isolate hands in the same env object. */
let last: { env: object; settings: Settings } | undefined;

/** The Worker's settings, parsed once per env object. */
export function settingsOf(env: object): Settings {
  if (last?.env !== env) last = { env, settings: parseSettings(env as Record<string, unknown>) };
  return last.settings;
}
