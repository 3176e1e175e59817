// Access codes of a sale's presale lanes (docs/lanes.md): made here, shown once, kept only as
// hashes. lua/checkout.lua checks, binds and spends a code in the same step as the units.
//
// A code is 12 characters of Crockford's base32 (60 random bits), shown in groups of four
// ("7KQ2-M9XD-4TRA"). What a person types is read the way Crockford's alphabet means it to be:
// case, spaces and hyphens do not matter, O reads as 0 and I or L as 1. Its hash is SHA-256 of
// the sale id and the code as read, so one code means nothing in another sale.
import { toHex } from "../shared/hex";

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const CODE_LENGTH = 12;
/** Hex characters of a code's hash kept: 128 bits, plenty against collisions among a sale's codes. */
const HASH_HEX = 32;

/** A fresh code, as the shop hands it out. */
function newCode(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(CODE_LENGTH));
  const chars = Array.from(bytes, (b) => ALPHABET[b & 31]).join("");
  return `${chars.slice(0, 4)}-${chars.slice(4, 8)}-${chars.slice(8)}`;
}

/** `count` distinct fresh codes. */
export function newCodes(count: number): string[] {
  const codes = new Set<string>();
  while (codes.size < count) codes.add(newCode());
  return [...codes];
}

/** The code as typed, read as Crockford's alphabet reads it; undefined when it cannot be one of ours. */
export function readCode(typed: string): string | undefined {
  const code = typed.toUpperCase().replace(/[\s-]/g, "").replace(/O/g, "0").replace(/[IL]/g, "1");
  return code.length === CODE_LENGTH && [...code].every((c) => ALPHABET.includes(c)) ? code : undefined;
}

const encoder = new TextEncoder();

/** What Redis and D1 keep of a code of `saleId`: the hash of the sale and the code as read (hex). */
export async function codeHash(saleId: string, code: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(`${saleId}\n${code}`));
  return toHex(new Uint8Array(digest)).slice(0, HASH_HEX);
}

/** A code's record in its Redis shard (lua/checkout.lua reads and rewrites it). */
export const codeRecord = (batchId: string, lane: string, uses: number, expiresAt: number | null, boundTo = "") =>
  `${batchId}|${lane}|${uses}|${expiresAt ?? 0}|${boundTo}`;
