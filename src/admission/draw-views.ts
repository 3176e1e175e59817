// What a draw shows: the public view anyone checks it against, the committed list a page
// (a chunk of the tree) at a time, and an entrant's own entry with its proof of inclusion.
import type { Redis } from "../redis/client";
import type { Sale } from "../sales/sale";
import type { DrawLeaf, DrawState, DrawView, EntryStatus, MyEntry } from "../shared/api-types";
import { DRAW_CHUNK_LEAVES } from "../shared/limits";
import { type DrawRun, drawCounts, findDrawRun, findEntry, leavesFrom, treeChunk } from "./draw-records";
import { inclusionProof } from "./draw-run";
import { entryCounts, heldEntry } from "./draws";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function drawState(sale: Sale & { draw: NonNullable<Sale["draw"]> }, run: DrawRun | undefined, now: number): DrawState {
  if (run?.phase === "drawn") return "drawn";
  if (run) return "drawing";
  if (now < sale.draw.opensAt) return "upcoming";
  return now < sale.draw.closesAt ? "open" : "closed";
}

/** The draw as anyone may check it: counts, commitments, the seed once drawn, the winners per variant. */
export async function drawView(
  db: D1Database,
  redis: Redis,
  sale: Sale & { draw: NonNullable<Sale["draw"]> },
  now = Date.now(),
): Promise<DrawView> {
  const run = await findDrawRun(db, sale.id);
  const committed = run?.entriesRoot !== null && run?.entriesRoot !== undefined;
  const drawn = run?.phase === "drawn";
  // Before the commit the entries are Redis' counts; from then on the counts the run kept
  // per variant in D1, a row each (the results only once drawn: a selection part-way through
  // its pages is not shown).
  const variants = sale.variants.length > 0 ? sale.variants : [{ id: "default", stock: sale.stock }];
  const [standing, counts] = await Promise.all([
    committed ? undefined : entryCounts(redis, sale.id),
    committed ? drawCounts(db, sale.id, variants.length) : [],
  ]);
  const countsOf = (variant: string) => counts.find((c) => c.variant === variant);
  const entriesOf = (variant: string) =>
    standing ? (standing.byVariant.get(variant)?.entries ?? 0) : (countsOf(variant)?.entries ?? 0);
  const resultOf = (variant: string, result: "selected" | "waitlisted") => (drawn ? (countsOf(variant)?.[result] ?? 0) : 0);
  return {
    saleId: sale.id,
    state: drawState(sale, run, now),
    opensAt: new Date(sale.draw.opensAt).toISOString(),
    closesAt: new Date(sale.draw.closesAt).toISOString(),
    entries: committed ? (run?.entries ?? 0) : (standing?.standing ?? 0),
    entriesRoot: run?.entriesRoot ?? null,
    committedAt: iso(run?.committedAt ?? null),
    seedCommitment: sale.queue.seedCommitment,
    seed: drawn ? sale.queue.seed : null,
    beacon: sale.draw.beacon && { ...sale.draw.beacon, randomness: run?.beaconRandomness ?? null },
    drawnAt: iso(run?.drawnAt ?? null),
    variants: variants.map((v) => ({
      id: v.id,
      stock: v.stock,
      entries: entriesOf(v.id),
      selected: resultOf(v.id, "selected"),
      waitlisted: resultOf(v.id, "waitlisted"),
    })),
    lanes: sale.lanes.map((lane) => ({
      name: lane.name,
      startsAt: new Date(lane.startsAt).toISOString(),
      stock: lane.stock,
      variants: lane.variants,
    })),
  };
}

/** A page of the committed list: the chunk `cursor` names (the first without one), and the next chunk's cursor. */
export async function drawLeaves(
  db: D1Database,
  sale: Sale,
  cursor: number,
): Promise<{ leaves: DrawLeaf[]; next: string | null } | undefined> {
  const saleId = sale.id;
  const run = await findDrawRun(db, saleId);
  if (!run?.entriesRoot) return undefined;
  const chunk = await treeChunk(db, saleId, cursor);
  if (!chunk) return { leaves: [], next: null };
  const drawn = run.phase === "drawn";
  const leaves = (await leavesFrom(db, saleId, chunk.firstLeaf, chunk.leaves)).map((l, i) => ({
    index: cursor * DRAW_CHUNK_LEAVES + i,
    leafHash: l.leafHash,
    entrant: l.entrant,
    variant: l.variant,
    quantity: l.quantity,
    ...(sale.lanes.length > 0 && { lane: l.lane }),
    ...(drawn && { result: l.result ?? ("not_selected" as const) }),
  }));
  return { leaves, next: cursor + 1 < run.chunks ? String(cursor + 1) : null };
}

/** The caller's entry: from D1 once committed (with its proof and result), else as Redis holds it; undefined: none. */
export async function myEntry(
  db: D1Database,
  redis: Redis,
  sale: Sale,
  userId: string,
  now = Date.now(),
): Promise<MyEntry | undefined> {
  const [run, held] = await Promise.all([findDrawRun(db, sale.id), heldEntry(redis, sale, userId)]);
  const committed = run?.entriesRoot ? await findEntry(db, sale.id, userId) : undefined;
  if (committed) {
    const drawn = run?.phase === "drawn";
    // An offer refused for its code (revoked or expired since the entry) records no order ("").
    const offered = committed.orderId !== null && committed.orderId !== "";
    const status: EntryStatus = !drawn
      ? "entered"
      : committed.orderId === ""
        ? "not_selected"
        : committed.result === "selected" || offered
          ? "selected"
          : committed.result === "waitlisted" && now < sale.endsAt
            ? "waitlisted"
            : "not_selected";
    const proof = await inclusionProof(db, sale.id, committed.leafHash);
    return {
      status,
      variant: committed.variant,
      quantity: committed.quantity,
      receipt: committed.receipt,
      ...(committed.lane !== "" && { lane: committed.lane }),
      ...(proof && { proof: { leafHash: committed.leafHash, leafIndex: proof.index, treeSize: proof.size, path: proof.path } }),
      ...(offered && { orderId: committed.orderId as string }),
    };
  }
  if (!held) return undefined;
  // Not in the committed list: withdrawn, taken quietly, or the draw has not committed yet.
  const status: EntryStatus = held.state === "w" ? "withdrawn" : run?.phase === "drawn" ? "not_selected" : "entered";
  return {
    status,
    variant: held.variant,
    quantity: held.quantity,
    receipt: held.receipt,
    ...(held.lane !== "" && { lane: held.lane }),
  };
}
