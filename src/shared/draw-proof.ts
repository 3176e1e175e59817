// A draw as anyone can check it: the bytes of a committed entry, the Merkle tree over them
// (RFC 6962's, so any Certificate Transparency tool reads it), the shuffle keyed by the
// sale's revealed seed and the beacon's value, and who wins. The Worker draws with these
// functions and `npm run verify-draw` recomputes with the same ones from public data alone;
// docs/draws.md states the format byte by byte for anyone writing their own verifier.
// Web Crypto only, so it runs the same in the Worker and in Node. Written here rather than
// taken from a Merkle library: none of the small ones builds RFC 6962's tree (they pad, sort
// pairs or hash leaves their own way), and a verifier needs these exact bytes.

import { hexBytes, toHex } from "./hex";

const utf8 = new TextEncoder();

const sha256 = async (...parts: Uint8Array[]): Promise<Uint8Array<ArrayBuffer>> => {
  const joined = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    joined.set(part, at);
    at += part.length;
  }
  return new Uint8Array(await crypto.subtle.digest("SHA-256", joined));
};

/** One committed entry: who (hidden), which variant, how many units, and in a sale with lanes which lane's draw. */
export interface Leaf {
  /** SHA-256 of the entrant's user id (UTF-8) and their receipt's 16 bytes, hex. */
  entrant: string;
  variant: string;
  quantity: number;
  /** A sale with presale lanes only: the lane whose draw the entry is in, "" for the public draw. */
  lane?: string;
}

/** The entrant's part of a leaf: only the entrant (and the shop) can link it to a user id. */
export const entrantHash = async (userId: string, receiptHex: string): Promise<string> =>
  toHex(await sha256(utf8.encode(userId), hexBytes(receiptHex)));

/**
 * A leaf's bytes: entrant (32) | variant's length (1) | variant (UTF-8) | quantity (1), and in a
 * sale with lanes | lane's length (1) | lane (UTF-8; nothing for the public draw).
 */
export function leafBytes(leaf: Leaf): Uint8Array<ArrayBuffer> {
  const variant = utf8.encode(leaf.variant);
  const lane = leaf.lane === undefined ? undefined : utf8.encode(leaf.lane);
  const bytes = new Uint8Array(32 + 1 + variant.length + 1 + (lane ? 1 + lane.length : 0));
  bytes.set(hexBytes(leaf.entrant), 0);
  bytes[32] = variant.length;
  bytes.set(variant, 33);
  bytes[33 + variant.length] = leaf.quantity;
  if (lane) {
    bytes[34 + variant.length] = lane.length;
    bytes.set(lane, 35 + variant.length);
  }
  return bytes;
}

const LEAF_PREFIX = new Uint8Array([0]);
const NODE_PREFIX = new Uint8Array([1]);

/** RFC 6962 leaf hash of any leaf's bytes: SHA-256(0x00 | bytes), hex. */
export const hashLeaf = async (bytes: Uint8Array): Promise<string> => toHex(await sha256(LEAF_PREFIX, bytes));

/** An entry's leaf hash. The tree's order is these, ascending. */
export const leafHash = (leaf: Leaf): Promise<string> => hashLeaf(leafBytes(leaf));

/** RFC 6962 interior node: SHA-256(0x01 | left | right). */
const node = async (left: Uint8Array, right: Uint8Array) => sha256(NODE_PREFIX, left, right);

/** The largest power of two smaller than n (n > 1). */
const split = (n: number) => 2 ** Math.floor(Math.log2(n - 1));

/**
 * RFC 6962's Merkle Tree Hash over subtree hashes in order: given leaf hashes it is the root;
 * given the roots of aligned subtrees of one power-of-two size (the last one possibly
 * smaller), it is the same root (every split of the whole tree then falls on their edges,
 * which is how the Worker builds a million leaves' root a chunk at a time). Empty: SHA-256("").
 */
export async function treeHash(hashes: readonly Uint8Array[]): Promise<Uint8Array> {
  if (hashes.length === 0) return sha256();
  if (hashes.length === 1) return hashes[0] as Uint8Array;
  const k = split(hashes.length);
  return node(await treeHash(hashes.slice(0, k)), await treeHash(hashes.slice(k)));
}

/** The root over leaf hashes (hex, in tree order), hex. */
export const merkleRoot = async (leafHashes: readonly string[]): Promise<string> =>
  toHex(await treeHash(leafHashes.map(hexBytes)));

/**
 * RFC 6962's audit path of leaf `m` among `hashes` (the subtree hashes the root is made of,
 * see treeHash): the sibling hashes from the leaf up, hex.
 */
export async function auditPath(m: number, hashes: readonly Uint8Array[]): Promise<string[]> {
  if (hashes.length <= 1) return [];
  const k = split(hashes.length);
  if (m < k) return [...(await auditPath(m, hashes.slice(0, k))), toHex(await treeHash(hashes.slice(k)))];
  return [...(await auditPath(m - k, hashes.slice(k))), toHex(await treeHash(hashes.slice(0, k)))];
}

/** Whether `leafHashHex`, at `index` of a tree of `size` leaves, is in the tree of `rootHex` by `path` (RFC 9162 2.1.3.2). */
export async function verifyInclusion(
  leafHashHex: string,
  index: number,
  size: number,
  path: readonly string[],
  rootHex: string,
): Promise<boolean> {
  if (index >= size) return false;
  let fn = index;
  let sn = size - 1;
  let r = hexBytes(leafHashHex) as Uint8Array;
  for (const p of path) {
    if (sn === 0) return false;
    const sibling = hexBytes(p);
    if (fn % 2 === 1 || fn === sn) {
      r = await node(sibling, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = await node(r, sibling);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && toHex(r) === rootHex;
}

/**
 * The draw's key: SHA-256 of the sale's seed (32 bytes) followed by the beacon round's
 * randomness (its bytes; nothing when the sale named no beacon), hex.
 */
export const drawKeyOf = async (seedHex: string, beaconRandomnessHex: string | null): Promise<string> =>
  toHex(await sha256(hexBytes(seedHex), beaconRandomnessHex ? hexBytes(beaconRandomnessHex) : new Uint8Array(0)));

/** An HMAC-SHA256 signer keyed with the draw key, made once per draw. */
export async function shuffler(drawKeyHex: string): Promise<(leafHashHex: string) => Promise<string>> {
  const key = await crypto.subtle.importKey("raw", hexBytes(drawKeyHex), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return async (leafHashHex) => toHex(await crypto.subtle.sign("HMAC", key, hexBytes(leafHashHex)));
}

/** A leaf's place in the shuffle: ascending by its shuffle key, then by its leaf hash. */
export const shuffleOrder = (a: { shuffleKey: string; leafHash: string }, b: { shuffleKey: string; leafHash: string }) =>
  a.shuffleKey < b.shuffleKey ? -1 : a.shuffleKey > b.shuffleKey ? 1 : a.leafHash < b.leafHash ? -1 : 1;

export type DrawResult = "selected" | "waitlisted" | "not_selected";

/** A presale lane as the selection spends it: its allotment in all and per variant (null: none of its own). */
export interface DrawLane {
  name: string;
  stock: number | null;
  variants: Record<string, number> | null;
}

/** The selection's state between pages: units left per variant, waitlists' lengths, and what each lane's draw took. */
export interface SelectionState {
  left: Record<string, number>;
  waitlisted: Record<string, number>;
  /** Units each lane's draw selected, by "<lane>" and "<lane>:<variant>" (a sale with lanes only). */
  lanes?: Record<string, number>;
}

/**
 * The order the selection walks: the lanes' draws one after another in start order, the public
 * draw last, each in shuffle order. `tier` is the entry's lane's index among the sale's lanes,
 * their count for the public draw (so a sale without lanes has one tier, 0).
 */
export const tierOf = (lanes: readonly { name: string }[], lane: string | undefined): number => {
  const k = lane ? lanes.findIndex((l) => l.name === lane) : -1;
  return k < 0 ? lanes.length : k;
};

/**
 * Who wins, walking each draw's shuffle in order (the lanes' first, see tierOf): an entry is
 * selected when its quantity still fits in what is left of its variant and, in a lane's draw,
 * of the lane's allotment (in all and of its variant: its own and what the capped lanes right
 * before it left, as lua/checkout.lua counts it at the lane's start); otherwise it joins its
 * draw's waitlist of its variant while that holds fewer entries than the variant has units
 * (returns go down it in this order), and is not selected after that. One call per entry, in
 * that order, so a draw of a million entries runs page by page with this state carried between pages.
 */
export class Selection {
  private readonly left: Map<string, number>;
  private readonly waitlists = new Map<string, number>();
  private readonly laneTaken = new Map<string, number>();

  constructor(
    readonly stock: ReadonlyMap<string, number>,
    readonly lanes: readonly DrawLane[] = [],
  ) {
    this.left = new Map(stock);
  }

  /** Restores what earlier pages decided (the state a draw run keeps). */
  static resume(stock: ReadonlyMap<string, number>, state: SelectionState, lanes: readonly DrawLane[] = []) {
    const selection = new Selection(stock, lanes);
    for (const [variant, n] of Object.entries(state.left)) selection.left.set(variant, n);
    for (const [key, n] of Object.entries(state.waitlisted)) selection.waitlists.set(key, n);
    for (const [key, n] of Object.entries(state.lanes ?? {})) selection.laneTaken.set(key, n);
    return selection;
  }

  get state(): SelectionState {
    return {
      left: Object.fromEntries(this.left),
      waitlisted: Object.fromEntries(this.waitlists),
      ...(this.lanes.length > 0 && { lanes: Object.fromEntries(this.laneTaken) }),
    };
  }

  /** What lane `k`'s draw may still take of `suffix` ("" in all, ":<variant>"): Infinity without an allotment of it. */
  private laneLeft(k: number, suffix: string): number {
    const allotmentOf = (lane: DrawLane) => (suffix === "" ? lane.stock : (lane.variants?.[suffix.slice(1)] ?? null));
    let left = 0;
    for (let j = k; j >= 0; j--) {
      const lane = this.lanes[j] as DrawLane;
      const allotment = allotmentOf(lane);
      if (allotment === null) return j === k ? Number.POSITIVE_INFINITY : left;
      left += allotment - (this.laneTaken.get(lane.name + suffix) ?? 0);
    }
    return left;
  }

  next(leaf: Pick<Leaf, "variant" | "quantity" | "lane">): DrawResult {
    const k = tierOf(this.lanes, leaf.lane);
    const lane = this.lanes[k];
    const suffix = `:${leaf.variant}`;
    const left = Math.min(
      this.left.get(leaf.variant) ?? 0,
      lane ? Math.min(this.laneLeft(k, ""), this.laneLeft(k, suffix)) : Number.POSITIVE_INFINITY,
    );
    if (leaf.quantity <= left) {
      this.left.set(leaf.variant, (this.left.get(leaf.variant) ?? 0) - leaf.quantity);
      if (lane) {
        for (const key of [lane.name, lane.name + suffix])
          this.laneTaken.set(key, (this.laneTaken.get(key) ?? 0) + leaf.quantity);
      }
      return "selected";
    }
    const list = lane ? `${lane.name}${suffix}` : leaf.variant;
    const waiting = this.waitlists.get(list) ?? 0;
    if (waiting < (this.stock.get(leaf.variant) ?? 0)) {
      this.waitlists.set(list, waiting + 1);
      return "waitlisted";
    }
    return "not_selected";
  }
}
