// Signs payment webhooks the way a provider does for POST /webhooks/payments, for tests and
// local tools: `Webhook-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, with
// one `v1=` per secret when given several (a provider rotating its secret signs with both).

async function hmacHex(secret: string, message: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(message));
  return [...new Uint8Array(mac)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export async function webhookSignature(
  secret: string | readonly string[],
  body: string,
  unixSeconds = Math.floor(Date.now() / 1000),
): Promise<string> {
  const secrets = typeof secret === "string" ? [secret] : secret;
  const macs = await Promise.all(secrets.map((s) => hmacHex(s, `${unixSeconds}.${body}`)));
  return [`t=${unixSeconds}`, ...macs.map((mac) => `v1=${mac}`)].join(",");
}
