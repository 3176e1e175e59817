import { unauthorized } from "./errors";

/** How far a webhook's timestamp may be from now, either way. */
export const WEBHOOK_TOLERANCE_SEC = 300;

/** A provider rotating its secret sends one `v1=` per secret; a few, never an unbounded list to check. */
export const MAX_WEBHOOK_SIGNATURES = 4;

const HEADER = new RegExp(`^t=(\\d{1,12})((?:,v1=[0-9a-f]{64}){1,${MAX_WEBHOOK_SIGNATURES}})$`);

const hexBytes = (hex: string) => new Uint8Array(hex.match(/../g)?.map((b) => Number.parseInt(b, 16)) ?? []);

/**
 * Checks `Webhook-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">[,v1=...]`:
 * the secret is the provider's and ours, the timestamp bounds replays of a captured request
 * to the tolerance (event ids bound them for good), and crypto.subtle.verify compares in
 * constant time. During a rotation the provider signs with both secrets: any `v1=` that
 * matches any of `secrets` (the current one, then PAYMENT_WEBHOOK_SECRET_PREVIOUS) passes.
 * Throws 401 on anything else.
 */
export async function verifyWebhookSignature(
  secrets: readonly string[],
  header: string | undefined,
  rawBody: string,
  nowSec = Math.floor(Date.now() / 1000),
): Promise<void> {
  const match = HEADER.exec(header ?? "");
  if (!match) throw unauthorized("a valid Webhook-Signature header is required");
  const [, t, entries] = match as unknown as [string, string, string];
  if (Math.abs(nowSec - Number(t)) > WEBHOOK_TOLERANCE_SEC)
    throw unauthorized("the webhook's timestamp is too old or too far ahead");
  const signed = new TextEncoder().encode(`${t}.${rawBody}`);
  const signatures = entries.split(",v1=").slice(1).map(hexBytes);
  for (const secret of secrets) {
    const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
      "verify",
    ]);
    for (const signature of signatures) {
      if (await crypto.subtle.verify("HMAC", key, signature, signed)) return;
    }
  }
  throw unauthorized("the webhook's signature does not match");
}
