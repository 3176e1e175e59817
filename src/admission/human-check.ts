// Turnstile, Cloudflare's human check, verified on the server: the token a widget gave the
// buyer goes to siteverify with the secret, and passes only if Cloudflare says it succeeded
// for this sale's action, on one of the shop's host names, and this check is its first.
// Cloudflare's published test secrets (any token passes) are refused unless the Worker serves
// loopback hosts only. Refusals are values the routes map to HTTP (src/http/errors.ts), like
// checkout's own.
import { IsolateCache } from "../isolate/isolate-cache";
import { log } from "../shared/log";
import type { Settings } from "../shared/settings";
import { isTurnstileTestSecret } from "../shared/turnstile-test-keys";
/** Turnstile's own bound on a token. */
export const MAX_TOKEN_LENGTH = 2_048;
/** A token is valid this long after the widget issued it: spent tokens are remembered as long. */
const TOKEN_LIFETIME_MS = 300_000;
/** An answer slower than this is no answer: the caller may try again. */
const VERIFY_TIMEOUT_MS = 5_000;

export type HumanCheckRefusal =
  /** No token: the storefront shows the widget and sends its token in Human-Check. */
  | { code: "HUMAN_CHECK_REQUIRED" }
  /** Cloudflare did not vouch for the token, for this sale's action, this once. */
  | { code: "HUMAN_CHECK_FAILED" };

/**
 * What a check needs: the secret (unset refuses every token: a deploy that forgot it fails
 * closed), where siteverify is, the shop's host names, and whether this is the local stack.
 */
export type HumanCheckSettings = Pick<
  Settings,
  "TURNSTILE_SECRET_KEY" | "TURNSTILE_VERIFY_URL" | "TURNSTILE_HOSTNAMES" | "LOOPBACK_HOSTS_ONLY"
>;

/** The widget's action for a sale: Turnstile allows 32 characters of [A-Za-z0-9_-]; a sale id has at most 15 digits. */
export const humanCheckAction = (saleId: string) => `sale-${saleId}`;

/** Raised when siteverify cannot be asked: neither a pass nor a failure (the route answers 503). */
export class HumanCheckUnavailable extends Error {}

/**
 * Tokens this isolate has sent to siteverify, by SHA-256. Cloudflare's answer is the record
 * that holds everywhere: a token checked twice, from any isolate anywhere, answers
 * `timeout-or-duplicate`. This one is local and free: a token replayed at the same isolate
 * (a bot's retry loop) is refused without an outbound call, and the published test secrets,
 * which never answer a duplicate, still accept a token once per isolate. A shared record
 * (Redis) would cost checkout a second round trip before its one script call.
 */
const spentTokens = new IsolateCache<true>({ ttlMs: TOKEN_LIFETIME_MS, maxEntries: 50_000, maxBytes: 4 << 20 });

/** The fields of siteverify's answer this check reads. */
interface SiteverifyAnswer {
  success?: unknown;
  action?: unknown;
  hostname?: unknown;
  "error-codes"?: unknown;
}

/**
 * Why these settings can vouch for no token, or undefined when they can: no secret; a
 * published test secret outside the local stack; no host names outside it (a token solved on
 * any site would pass).
 */
function unusable(settings: HumanCheckSettings): string | undefined {
  if (!settings.TURNSTILE_SECRET_KEY || !settings.TURNSTILE_VERIFY_URL) return "TURNSTILE_SECRET_KEY is not set";
  if (settings.LOOPBACK_HOSTS_ONLY) return undefined;
  if (isTurnstileTestSecret(settings.TURNSTILE_SECRET_KEY))
    return "TURNSTILE_SECRET_KEY is one of Cloudflare's published test secrets, which vouch for anyone";
  if (settings.TURNSTILE_HOSTNAMES.length === 0) return "TURNSTILE_HOSTNAMES is not set";
  return undefined;
}

/** Whether the token was solved on one of the shop's host names (any, on the local stack with none set). */
function onShopHost(hostname: unknown, { TURNSTILE_HOSTNAMES: hostnames }: HumanCheckSettings): boolean {
  if (hostnames.length === 0) return true; // loopback hosts only: unusable() refuses the rest
  return typeof hostname === "string" && hostnames.includes(hostname.toLowerCase());
}

async function tokenDigest(token: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** siteverify's answer, or HumanCheckUnavailable when it cannot be had. */
async function siteverify(verifyUrl: string, secret: string, token: string, remoteIp: string | undefined) {
  let res: Response;
  try {
    res = await fetch(verifyUrl, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ secret, response: token, ...(remoteIp && { remoteip: remoteIp }) }),
      signal: AbortSignal.timeout(VERIFY_TIMEOUT_MS),
    });
  } catch (err) {
    throw new HumanCheckUnavailable("siteverify cannot be reached", { cause: err });
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new HumanCheckUnavailable(`siteverify answered ${res.status}`);
  }
  try {
    return (await res.json()) as SiteverifyAnswer;
  } catch (err) {
    throw new HumanCheckUnavailable("siteverify answered something other than JSON", { cause: err });
  }
}

/**
 * Checks the Human-Check token for `saleId`: undefined when it passes, else the refusal.
 * Each token passes once. Throws HumanCheckUnavailable when siteverify cannot answer (the
 * token is then not counted as spent: the buyer may send it again).
 */
export async function checkHuman(
  token: string | undefined,
  saleId: string,
  remoteIp: string | undefined,
  settings: HumanCheckSettings,
): Promise<HumanCheckRefusal | undefined> {
  if (token === undefined || token.trim() === "") return { code: "HUMAN_CHECK_REQUIRED" };
  if (token.length > MAX_TOKEN_LENGTH) return { code: "HUMAN_CHECK_FAILED" };
  const problem = unusable(settings);
  const { TURNSTILE_SECRET_KEY: secret, TURNSTILE_VERIFY_URL: verifyUrl } = settings;
  if (problem || !secret || !verifyUrl) {
    log.error(`human check: ${problem}; every token is refused`, { saleId });
    return { code: "HUMAN_CHECK_FAILED" };
  }
  const digest = await tokenDigest(token);
  if (spentTokens.get(digest)) return { code: "HUMAN_CHECK_FAILED" };
  // Marked before the call: two requests with one token race to one siteverify, not two.
  spentTokens.set(digest, true);
  let answer: SiteverifyAnswer;
  try {
    answer = await siteverify(verifyUrl, secret, token, remoteIp);
  } catch (err) {
    spentTokens.delete(digest);
    throw err;
  }
  if (answer.success === true && answer.action === humanCheckAction(saleId) && onShopHost(answer.hostname, settings))
    return undefined;
  return { code: "HUMAN_CHECK_FAILED" };
}
