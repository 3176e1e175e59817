// Queue tickets and passes: claims the Worker signs and the buyer carries, so a poll needs no
// Redis read to know the buyer's place, and a forged or borrowed pass is refused before Redis.
//
// Format: "<kind>.<claims>.<mac>", claims the base64url of their JSON, mac the base64url of
// HMAC-SHA256 over "<kind>.<claims>". The key is derived (HKDF-SHA256) from JWT_SECRET: whoever
// holds that secret can sign in as any buyer already, so a second secret would protect nothing
// more, and there is none to provision. Kinds: "qt1" (ticket), "qp1" (pass).
//
// A ticket or pass of a presale lane's own line (docs/lanes.md, "Lanes with a waiting room")
// names the lane (`l`); one of the public line names none, as every one did before lanes.
//
// A quiet ticket (a caller that loses quietly: src/admission/gate.ts) is a ticket like any
// other: its place is one Redis gave it and nobody else (lua/waiting-room-join.lua), so nothing
// in the ticket needs to, or does, tell it apart. Its pass, once the line reaches it, is a pass
// like any other too: only Redis' record of it is marked quiet, and lua/checkout.lua answers
// it as sold out.

import { LANE_NAME_PATTERN } from "../shared/limits";

/**
 * A ticket: the buyer's place in a sale's line (null while a random sale's pre-queue is
 * undrawn), and for a random sale's pre-queue joiner their own draw key (`d`), from which a
 * poll estimates where they stand without asking Redis.
 */
export interface TicketClaims {
  s: string;
  u: string;
  p: number | null;
  d?: string;
  /** The presale lane whose own line the place is in; absent: the public line. */
  l?: string;
}

/** A pass: the buyer's admitted place, and when its time to check out ends (epoch ms). */
export interface PassClaims {
  s: string;
  u: string;
  p: number;
  e: number;
  /** The presale lane whose own line admitted it; absent: the public line. */
  l?: string;
}

/** A lane claim, when present, is a lane's name. */
const laneClaimOk = (l: unknown) => l === undefined || (typeof l === "string" && LANE_NAME_PATTERN.test(l));

type Kind = "qt1" | "qp1";

/** What the key signs: tickets and passes. */
const KEY_INFO = "flash-sale queue tickets and passes";

const encoder = new TextEncoder();
const keys = new Map<string, Promise<CryptoKey>>();

function signingKey(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (!key) {
    key = crypto.subtle
      .importKey("raw", encoder.encode(secret), "HKDF", false, ["deriveKey"])
      .then((material) =>
        crypto.subtle.deriveKey(
          { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: encoder.encode(KEY_INFO) },
          material,
          { name: "HMAC", hash: "SHA-256", length: 256 },
          false,
          ["sign", "verify"],
        ),
      );
    keys.set(secret, key);
  }
  return key;
}

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");

/** An HMAC-SHA256 in unpadded base64url: 32 bytes, 43 characters. */
const MAC_LENGTH = 43;

/**
 * The bytes of `text` when it is base64url as this module writes it (unpadded, no other
 * spelling), else undefined; never throws. A length of 4n+1 is no base64 (atob would throw),
 * and atob ignores the last character's unused bits: re-encoding refuses the other spellings.
 */
function fromBase64url(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) return undefined;
  const bytes = Uint8Array.from(atob(text.replaceAll("-", "+").replaceAll("_", "/")), (c) => c.charCodeAt(0));
  return base64url(bytes) === text ? bytes : undefined;
}

/** The claims object `bytes` holds as JSON, or undefined (not JSON, or not an object); never throws. */
function claimsOf(bytes: Uint8Array<ArrayBuffer>): Record<string, unknown> | undefined {
  try {
    const claims: unknown = JSON.parse(new TextDecoder().decode(bytes));
    return typeof claims === "object" && claims !== null ? (claims as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

async function sign(secret: string, kind: Kind, claims: TicketClaims | PassClaims): Promise<string> {
  const body = `${kind}.${base64url(encoder.encode(JSON.stringify(claims)))}`;
  const mac = await crypto.subtle.sign("HMAC", await signingKey(secret), encoder.encode(body));
  return `${body}.${base64url(new Uint8Array(mac))}`;
}

/**
 * The claims of a token of `kind` whose mac verifies (in constant time), or undefined: a
 * malformed token (any shape, any length) is simply not a valid one, never an error.
 */
async function verified(secret: string, kind: Kind, token: string): Promise<Record<string, unknown> | undefined> {
  const [k, claims, mac, extra] = token.split(".");
  if (k !== kind || claims === undefined || mac?.length !== MAC_LENGTH || extra !== undefined) return undefined;
  const macBytes = fromBase64url(mac);
  if (!macBytes) return undefined;
  const ok = await crypto.subtle.verify("HMAC", await signingKey(secret), macBytes, encoder.encode(`${k}.${claims}`));
  if (!ok) return undefined;
  const json = fromBase64url(claims);
  return json && claimsOf(json);
}

export const signTicket = (secret: string, claims: TicketClaims) => sign(secret, "qt1", claims);
export const signPass = (secret: string, claims: PassClaims) => sign(secret, "qp1", claims);

/** The ticket's claims when it is genuine and names this sale and buyer. */
export async function readTicket(
  secret: string,
  token: string,
  saleId: string,
  userId: string,
): Promise<TicketClaims | undefined> {
  const c = await verified(secret, "qt1", token);
  if (c?.s !== saleId || c.u !== userId || !(c.p === null || Number.isSafeInteger(c.p))) return undefined;
  if (c.d !== undefined && !(typeof c.d === "string" && /^[0-9a-f]{64}$/.test(c.d))) return undefined;
  if (!laneClaimOk(c.l)) return undefined;
  return c as unknown as TicketClaims;
}

/** The pass's claims when it is genuine and names this sale and buyer. */
export async function readPass(secret: string, token: string, saleId: string, userId: string): Promise<PassClaims | undefined> {
  const c = await verified(secret, "qp1", token);
  if (c?.s !== saleId || c.u !== userId || !Number.isSafeInteger(c.p) || !Number.isSafeInteger(c.e)) return undefined;
  if (!laneClaimOk(c.l)) return undefined;
  return c as unknown as PassClaims;
}
