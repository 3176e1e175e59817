// A random sale's waiting room checked from public data alone (docs/api.md, "Verifying a
// draw"): the seed revealed once the sale is over hashes to the commitment published at its
// creation, the published places are numbered 1..drawn and their leaves hash to the published
// root, and they are in draw-key order, which is the draw. With a user id, that user's draw key
// (HMAC-SHA256 of the seed over the id) and the place it holds, which must be one, and with the
// place the sale gave them (their poll showed it), that it is that one. A presale lane's own
// line (`lane`) is published apart, its draw keys under the seed derived from the sale's for it
// (lineSeed). No token: `npm run verify-queue` prints what this finds; the tests run it against
// real sales and tampered pages.
import type { QueueDrawPlace, QueueDrawPlacesPage, QueueDrawView } from "../../src/shared/api-types.ts";
import { treeHash } from "../../src/shared/draw-proof.ts";
import { hexBytes, toHex } from "../../src/shared/hex.ts";
import { DRAW_KEY_PATTERN, placeLeafHash } from "../../src/shared/queue-draw-proof.ts";
import { drawKey, lineSeed, seedCommitment } from "../../src/shared/waiting-room-draw.ts";
import { getJson } from "./public-json.ts";

export interface QueueVerdict {
  /** Everything matched. */
  ok: boolean;
  /** What differs, one line each (empty when ok). */
  problems: string[];
  /** Places published. */
  places: number;
  placesRoot: string | null;
  /** With a user id: their draw key, and the place it holds in the published list (null: none). */
  user?: { userId: string; drawKey: string; place: number | null };
}

/** Differences of one kind listed before the rest are counted: a list reordered throughout would name every place. */
const LISTED = 10;

/** Leaves a chunk of the root's computation holds: any power of two gives the same root (treeHash). */
const CHUNK = 1_024;

/** RFC 6962's root over leaf hashes given in order, kept as one chunk's leaves and the roots of the chunks before. */
class ChunkedTree {
  private leaves: Uint8Array[] = [];
  private readonly chunkRoots: Uint8Array[] = [];

  async add(leafHashes: readonly string[]): Promise<void> {
    this.leaves.push(...leafHashes.map(hexBytes));
    while (this.leaves.length >= CHUNK) this.chunkRoots.push(await treeHash(this.leaves.splice(0, CHUNK)));
  }

  async root(): Promise<string> {
    if (this.leaves.length > 0) this.chunkRoots.push(await treeHash(this.leaves.splice(0)));
    return toHex(await treeHash(this.chunkRoots));
  }
}

/**
 * Verifies the pre-queue of sale `saleId` at the API `baseUrl` (the Worker's origin), reading its
 * public routes with `fetcher`; `lane`: that presale lane's own line rather than the public
 * one; `userId`: also find that user's place, and with `place` (the place the sale gave them)
 * check it is that one.
 */
export async function verifyQueue(
  baseUrl: string,
  saleId: string,
  { lane, userId, place }: { lane?: string; userId?: string; place?: number } = {},
  fetcher: typeof fetch = fetch,
): Promise<QueueVerdict> {
  const routes = `${baseUrl}/api/sales/${saleId}/queue/draw`;
  const ofLane = lane === undefined ? "" : `lane=${encodeURIComponent(lane)}`;
  const view = await getJson<QueueDrawView>(fetcher, ofLane ? `${routes}?${ofLane}` : routes);
  if (view.state !== "ready" || view.seed === null || view.placesRoot === null || view.drawn === null) {
    const why =
      view.seed === null
        ? "the seed is secret until the sale ends (or is cancelled)"
        : "its pre-queue is being published: ask again shortly";
    return { ok: false, problems: [`nothing to verify yet: ${why}`], places: 0, placesRoot: null };
  }
  const problems: string[] = [];
  if ((await seedCommitment(view.seed)) !== view.seedCommitment)
    problems.push(`the seed does not hash to the commitment published at the sale's creation (${view.seedCommitment})`);
  const userKey = userId === undefined ? undefined : await drawKey(await lineSeed(view.seed, lane ?? ""), userId);

  // The list, a page at a time (a million places are never held at once): places 1..drawn, each
  // a draw key, in draw-key order (the draw), the user's key found; its leaves to the root.
  const misplaced: string[] = [];
  const tree = new ChunkedTree();
  let before: QueueDrawPlace | undefined;
  let count = 0;
  let userPlace: number | null = null;
  for (let cursor: string | null = "0"; cursor !== null; ) {
    const page: QueueDrawPlacesPage = await getJson(fetcher, `${routes}/places?${ofLane && `${ofLane}&`}cursor=${cursor}`);
    for (const p of page.places) {
      count++;
      if (p.place !== count) misplaced.push(`the published place at position ${count} is numbered ${p.place}`);
      if (!DRAW_KEY_PATTERN.test(p.drawKey)) misplaced.push(`place ${p.place}'s draw key is not 64 hex characters`);
      if (before && before.drawKey >= p.drawKey)
        misplaced.push(`place ${p.place} is out of draw order: its draw key does not come after place ${before.place}'s`);
      if (p.drawKey === userKey) userPlace = p.place;
      before = p;
    }
    await tree.add(await Promise.all(page.places.map((p) => placeLeafHash(p.place, p.drawKey))));
    cursor = page.next;
  }
  problems.push(...misplaced.slice(0, LISTED));
  if (misplaced.length > LISTED) problems.push(`... and ${misplaced.length - LISTED} more places numbered or ordered wrong`);
  if (count !== view.drawn) problems.push(`${count} places are published for ${view.drawn} drawn`);
  const root = await tree.root();
  if (root !== view.placesRoot) problems.push(`the places' root is ${root}, not the published placesRoot ${view.placesRoot}`);

  // The user's draw key, as their ticket's d claim holds it, and their place.
  let user: QueueVerdict["user"];
  if (userId !== undefined && userKey !== undefined) {
    user = { userId, drawKey: userKey, place: userPlace };
    if (userPlace === null)
      problems.push(
        `user ${userId} (draw key ${userKey}) holds no place in the pre-queue: they did not join before the start, or the list leaves them out`,
      );
    else if (place !== undefined && place !== userPlace)
      problems.push(`user ${userId} was given place ${place}, but the published draw puts their draw key at place ${userPlace}`);
  }
  return { ok: problems.length === 0, problems, places: count, placesRoot: view.placesRoot, ...(user && { user }) };
}
