// The draw of a random sale's pre-queue, as anyone can recompute it once the seed is out:
// the Worker places buyers with it, `npm run verify-queue` checks a sale's order with it.
// WebCrypto only, so it runs the same in the Worker and in Node.
import { hexBytes, toHex } from "./hex";

/** SHA-256 of the seed's bytes, hex: the commitment a random sale publishes before joining opens. */
export async function seedCommitment(seedHex: string): Promise<string> {
  return toHex(await crypto.subtle.digest("SHA-256", hexBytes(seedHex)));
}

/** HMAC-SHA256 keyed with the seed's bytes, over `text`'s UTF-8, hex. */
async function hmacHex(seedHex: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", hexBytes(seedHex), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return toHex(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(text)));
}

/** A buyer's draw key: HMAC-SHA256 keyed with the seed's bytes, over the user id's UTF-8, hex. */
export const drawKey = (seedHex: string, userId: string): Promise<string> => hmacHex(seedHex, userId);

/**
 * The seed of a line of the waiting room (docs/lanes.md, "Lanes with a waiting room"): the
 * sale's own for the public line (""), and for a presale lane's own line HMAC-SHA256 keyed with
 * the sale's seed over "lane:<lane>", hex. Each line is drawn apart, and anyone holding the
 * sale's seed, revealed once it ends, derives every line's and recomputes its draw.
 */
export const lineSeed = (seedHex: string, line: string): Promise<string> =>
  line === "" ? Promise.resolve(seedHex) : hmacHex(seedHex, `lane:${line}`);

/**
 * The pre-queue's places: by draw key, then (never needed in practice) by user id, comparing
 * bytes as Redis orders the members "<draw key>:<user id>" of a sorted set with equal scores.
 */
export async function drawOrder(seedHex: string, userIds: readonly string[]): Promise<string[]> {
  const keyed = await Promise.all(
    userIds.map(async (userId) => ({ userId, member: `${await drawKey(seedHex, userId)}:${userId}` })),
  );
  const bytes = (s: string) => new TextEncoder().encode(s);
  const compare = (a: Uint8Array, b: Uint8Array) => {
    for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return (a[i] as number) - (b[i] as number);
    return a.length - b.length;
  };
  return keyed.sort((a, b) => compare(bytes(a.member), bytes(b.member))).map((k) => k.userId);
}

/** How far from the front (in seconds of admission) a drawn buyer may be told an estimate instead of an exact place. */
const ESTIMATE_BEYOND_SEC = 10;

/**
 * A random sale's pre-queue joiner, after the start, far enough from the front: where they
 * stand, estimated from their draw key alone at no Redis cost (the keys are uniform, so the
 * key's fraction of the key space times the drawn count is the place, give or take a
 * binomial spread). Undefined when they may be near the front: then only the exact place
 * (one lookup) will do. This keeps a million pre-queue buyers from each costing a command
 * at the start: exact places are looked up at about the pace the line moves.
 */
export function estimatedPlace(
  drawKeyHex: string,
  progress: { drawn: number; admitted: number; admitPerSec: number },
): number | undefined {
  const fraction = Number.parseInt(drawKeyHex.slice(0, 13), 16) / 16 ** 13;
  const place = 1 + Math.floor(progress.drawn * fraction);
  const spread = Math.sqrt(progress.drawn * fraction * (1 - fraction));
  const nearFront = progress.admitted + progress.admitPerSec * ESTIMATE_BEYOND_SEC;
  return place - 4 * spread - 1 > nearFront ? place : undefined;
}
