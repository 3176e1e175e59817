// The catalog's cursors as clients see them: a position (the last sale's start and id), an
// expiry, and an HMAC over both. Only cursors this API issued pass, so clients cannot make up
// positions: each cached page (keyed by position alone) is one the catalog really had, and
// their count stays bounded by the catalog's size, whatever clients send.
import { decodeBase64Url, encodeBase64Url } from "hono/utils/encode";
import { decodeCursor, encodeCursor } from "./catalog";
import type { CatalogCursor } from "./repository";

/** How long a nextCursor may be used; a browsing session is far shorter. */
export const CURSOR_TTL_MS = 30 * 60_000;

/** `<position>.<expiry, ms base 36>.<base64url HMAC-SHA256>`. */
const SIGNED = /^([0-9a-z]{1,11}_[0-9a-z]{1,11})\.([0-9a-z]{1,11})\.([A-Za-z0-9_-]{43})$/;

/** Labels what is signed, so this MAC can never stand for the same secret's JWT signatures. */
const signedText = (position: string, expiry: string) => new TextEncoder().encode(`catalog-cursor:${position}.${expiry}`);

let cachedKey: { secret: string; key: Promise<CryptoKey> } | undefined;
function keyFor(secret: string): Promise<CryptoKey> {
  if (cachedKey?.secret !== secret) {
    const key = crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
      "sign",
      "verify",
    ]);
    cachedKey = { secret, key };
  }
  return cachedKey.key;
}

/** The nextCursor a client is given for `cursor`, valid CURSOR_TTL_MS from `nowMs`. */
export async function signCursor(cursor: CatalogCursor, secret: string, nowMs = Date.now()): Promise<string> {
  const position = encodeCursor(cursor);
  const expiry = (nowMs + CURSOR_TTL_MS).toString(36);
  const mac = await crypto.subtle.sign("HMAC", await keyFor(secret), signedText(position, expiry));
  return `${position}.${expiry}.${encodeBase64Url(mac).replace(/=+$/, "")}`;
}

/** The position a cursor names when this API issued it and it has not expired; else undefined. */
export async function verifyCursor(text: string, secret: string, nowMs = Date.now()): Promise<CatalogCursor | undefined> {
  const match = SIGNED.exec(text);
  if (!match) return undefined;
  const [, position, expiry, mac] = match as unknown as [string, string, string, string];
  // crypto.subtle.verify compares in constant time.
  const signature = decodeBase64Url(`${mac}=`);
  if (!(await crypto.subtle.verify("HMAC", await keyFor(secret), signature, signedText(position, expiry)))) return undefined;
  if (Number.parseInt(expiry, 36) <= nowMs) return undefined;
  return decodeCursor(position);
}
