// A draw checked from public data alone (docs/draws.md): the committed list's leaves hash to
// the published root, the seed matches the commitment published at the sale's creation, the
// beacon's round says what the draw says it said, and the shuffle and the selection, done
// again here (each presale lane's draw first, then the public one), give the winners and the
// waitlist the sale published, and each variant's
// published counts (entries, selected, waitlisted) are the list's. `npm run verify-draw`
// prints what this finds; the tests run it against real draws and tampered ones.
import type { DrawLeaf, DrawView } from "../../src/shared/api-types.ts";
import { drawKeyOf, leafHash, merkleRoot, Selection, shuffleOrder, shuffler, tierOf } from "../../src/shared/draw-proof.ts";
import { seedCommitment } from "../../src/shared/waiting-room-draw.ts";
import { getJson } from "./public-json.ts";

export interface DrawVerdict {
  /** Everything matched. */
  ok: boolean;
  /** What differs, one line each (empty when ok). */
  problems: string[];
  entries: number;
  winners: number;
}

/**
 * Verifies the draw of sale `saleId` at the API `baseUrl` (the Worker's origin), reading its
 * public routes and the beacon it names with `fetcher`.
 */
export async function verifyDraw(baseUrl: string, saleId: string, fetcher: typeof fetch = fetch): Promise<DrawVerdict> {
  const problems: string[] = [];
  const view = await getJson<DrawView>(fetcher, `${baseUrl}/api/sales/${saleId}/draw`);
  if (view.state !== "drawn" || !view.seed || !view.entriesRoot) {
    return { ok: false, problems: [`the draw is ${view.state}: nothing to verify yet`], entries: 0, winners: 0 };
  }
  const leaves: DrawLeaf[] = [];
  for (let cursor: string | null = "0"; cursor !== null; ) {
    const page: { leaves: DrawLeaf[]; next: string | null } = await getJson(
      fetcher,
      `${baseUrl}/api/sales/${saleId}/draw/entries?cursor=${cursor}`,
    );
    leaves.push(...page.leaves);
    cursor = page.next;
  }

  // The committed list: each leaf's hash from its fields, in tree order, to the published root.
  for (const [i, leaf] of leaves.entries()) {
    if (leaf.index !== i) problems.push(`leaf ${i} is published as index ${leaf.index}`);
    const hash = await leafHash(leaf);
    if (hash !== leaf.leafHash) problems.push(`leaf ${i}: its fields hash to ${hash}, not the published ${leaf.leafHash}`);
    if (i > 0 && (leaves[i - 1] as DrawLeaf).leafHash >= leaf.leafHash) problems.push(`leaf ${i} is out of tree order`);
  }
  const root = await merkleRoot(leaves.map((l) => l.leafHash));
  if (root !== view.entriesRoot) problems.push(`the leaves' root is ${root}, not the published entriesRoot ${view.entriesRoot}`);
  if (leaves.length !== view.entries) problems.push(`${leaves.length} leaves are published for ${view.entries} entries`);

  // The seed against its commitment; the beacon's round against the beacon itself.
  if ((await seedCommitment(view.seed)) !== view.seedCommitment)
    problems.push(`the seed does not hash to the commitment published at the sale's creation (${view.seedCommitment})`);
  if (view.beacon) {
    const round = await getJson<{ randomness?: string }>(
      fetcher,
      `${view.beacon.url.replace(/\/+$/, "")}/public/${view.beacon.round}`,
    );
    if (round.randomness !== view.beacon.randomness)
      problems.push(`beacon round ${view.beacon.round} is ${round.randomness}, not the ${view.beacon.randomness} the draw used`);
  }

  // A sale with lanes names each leaf's draw; one without, none.
  const withLanes = view.lanes.length > 0;
  for (const leaf of leaves) {
    if ((leaf.lane !== undefined) !== withLanes)
      problems.push(`leaf ${leaf.index} ${withLanes ? "names no lane in a sale with lanes" : "names a lane in a sale without"}`);
    else if (leaf.lane && !view.lanes.some((l) => l.name === leaf.lane))
      problems.push(`leaf ${leaf.index} names lane ${leaf.lane}, which the sale has not`);
  }

  // The shuffle and the selection, again: the lanes' draws in start order, then the public one.
  const keyOf = await shuffler(await drawKeyOf(view.seed, view.beacon?.randomness ?? null));
  const shuffled = await Promise.all(
    leaves.map(async (leaf) => ({
      leaf,
      tier: tierOf(view.lanes, leaf.lane),
      leafHash: leaf.leafHash,
      shuffleKey: await keyOf(leaf.leafHash),
    })),
  );
  shuffled.sort((a, b) => a.tier - b.tier || shuffleOrder(a, b));
  const selection = new Selection(
    new Map(view.variants.map((v) => [v.id, v.stock])),
    view.lanes.map(({ name, stock, variants }) => ({ name, stock, variants })),
  );
  const counted = new Map(view.variants.map((v) => [v.id, { entries: 0, selected: 0, waitlisted: 0 }]));
  let winners = 0;
  for (const { leaf } of shuffled) {
    const result = selection.next(leaf);
    if (result === "selected") winners++;
    const count = counted.get(leaf.variant);
    if (count) count.entries++;
    if (count && result !== "not_selected") count[result]++;
    if (leaf.result !== result)
      problems.push(`leaf ${leaf.index} (${leaf.leafHash}) is published ${leaf.result}, the draw gives ${result}`);
  }
  for (const v of view.variants) {
    const count = counted.get(v.id);
    if (count?.entries !== v.entries)
      problems.push(`variant ${v.id}: published ${v.entries} entries, the list holds ${count?.entries}`);
    if (count?.selected !== v.selected || count.waitlisted !== v.waitlisted)
      problems.push(
        `variant ${v.id}: published ${v.selected} selected and ${v.waitlisted} waitlisted, the draw gives ${count?.selected} and ${count?.waitlisted}`,
      );
  }
  return { ok: problems.length === 0, problems, entries: leaves.length, winners };
}
