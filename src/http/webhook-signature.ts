import { unauthorized } from "./errors";

/** How far a webhook's timestamp may be from now, either way. */
export const WEBHOOK_TOLERANCE_SEC = 300;

const HEADER = /^t=(\d{1,12}),v1=([0-9a-f]{64})$/;

/**
 * Checks `Webhook-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`:
 * the secret is the provider's and ours, the timestamp bounds replays of a captured request
 * to the tolerance (event ids bound them for good), and crypto.subtle.verify compares in
 * constant time. Throws 401 on anything else.
 */
export async function verifyWebhookSignature(
  secret: string,
  header: string | undefined,
  rawBody: string,
  nowSec = Math.floor(Date.now() / 1000),
): Promise<void> {
  const match = HEADER.exec(header ?? "");
  if (!match) throw unauthorized("a valid Webhook-Signature header is required");
  const [, t, hex] = match as unknown as [string, string, string];
  if (Math.abs(nowSec - Number(t)) > WEBHOOK_TOLERANCE_SEC)
    throw unauthorized("the webhook's timestamp is too old or too far ahead");
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "verify",
  ]);
  const signature = new Uint8Array(hex.match(/../g)?.map((b) => Number.parseInt(b, 16)) ?? []);
  const valid = await crypto.subtle.verify("HMAC", key, signature, new TextEncoder().encode(`${t}.${rawBody}`));
  if (!valid) throw unauthorized("the webhook's signature does not match");
}
