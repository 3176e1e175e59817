// What operators do to a sale: create, edit, pause, resume, cancel. D1 is the record and is
// written first; then Redis' copy follows (lua/sale-sync.lua, newest version wins) and the
// cached copies go: now, and again a moment later (a reader that loaded the old row just
// before the write cannot leave it cached; the eviction floor already refuses its write-back).
import { bloomAdd } from "../redis/bloom";
import type { Redis } from "../redis/client";
import { bucketsFor } from "../shared/keys";
import { EVICT_AGAIN_AFTER_SECONDS, MAX_STOCK, VARIANT_COUNT } from "../shared/limits";
import { log } from "../shared/log";
import type { JobMessage } from "../shared/messages";
import type { QueueSettings, VariantInput } from "../shared/requests";
import { drawProblem as drawSettingsProblem, lanesProblem, windowProblem } from "../shared/requests";
import { evictSale, isolateReads } from "./catalog";
import { preloadSale } from "./live-state";
import { findSale, type SaleChanges, setSaleState, updateSale } from "./repository";
import { firstLineOpensAt, opensToBuyersAt, type Sale, type SaleState, type SaleVariant } from "./sale";
import { waitingRoomFrom } from "./waiting-room-settings";

/** What an edit asks for: the waiting room's settings and the variants are merged over the sale's own. */
export type SaleEdit = Omit<SaleChanges, "queue" | "variants"> & { queue?: QueueSettings; variants?: VariantInput[] };

/** Reads before an edit gives up on a sale that keeps changing under it. */
const EDIT_ATTEMPTS = 3;

/**
 * After D1 recorded a sale (created, edited, paused...): Redis' copy of it follows, the Bloom
 * filter knows it, its cached copies and the catalog's pages are evicted, and a second
 * eviction is scheduled. Safe to repeat: a retry after a failure here finishes the job.
 * Throws when Redis cannot be reached (D1 has the change; retrying the request finishes it).
 * Returns "missing" when Redis lost the sale's live state: the change waits in D1 for the
 * restore, which applies it.
 */
export async function propagateSale(redis: Redis, jobs: Queue<JobMessage>, sale: Sale): Promise<"synced" | "missing"> {
  // An archived sale has no keys left in Redis, and must not get them back.
  const sync = sale.archivedAt === null ? preloadSale(redis, sale) : undefined;
  const archived = sale.archivedAt !== null;
  const [synced] = await Promise.all([sync, bloomAdd(redis, [sale.id]), evictSale(redis, sale.id, { archived })]);
  isolateReads.forget(sale.id);
  await jobs
    .send({ kind: "evict-sale", saleId: sale.id, archived }, { delaySeconds: EVICT_AGAIN_AFTER_SECONDS, contentType: "json" })
    .catch((err) => log.warn("second eviction not scheduled; the eviction floor still holds", { saleId: sale.id }, err));
  return synced === "missing" ? "missing" : "synced";
}

export type EditRefusal =
  | { code: "SALE_NOT_FOUND" }
  | { code: "VERSION_MISMATCH"; version: number }
  | { code: "SALE_STARTED" }
  | { code: "QUEUE_OPEN" }
  | { code: "DRAW_OPEN" }
  | { code: "SALE_CLOSED" }
  | { code: "STOCK_DECREASE"; stock: number; variant?: string }
  | { code: "INVALID_VARIANTS"; message: string }
  | { code: "INVALID_WINDOW"; message: string; field: string }
  | { code: "NO_ID_SLOT" }
  | { code: "EDIT_CONFLICT" };

/**
 * The sale's variants with an edit's over them: a variant listed takes its label, price and
 * stock (upward only; its price only before the start), a new one is added (before the start
 * only), and the sale's stock becomes their sum. A sale without variants keeps none.
 */
function mergedVariants(sale: Sale, edit: VariantInput[], now: number): { variants: SaleVariant[]; stock: number } | EditRefusal {
  if (sale.variants.length === 0)
    return { code: "INVALID_VARIANTS", message: "this sale was created without variants: change its stock" };
  const merged = new Map(sale.variants.map((v) => [v.id, v]));
  for (const change of edit) {
    const before = merged.get(change.id);
    // A price the same as the one buyers see (its own, or the sale's) is no change.
    const repriced = change.price !== undefined && change.price !== (before?.price ?? sale.price);
    const price = repriced ? (change.price ?? null) : (before?.price ?? null);
    if (before && change.stock < before.stock) return { code: "STOCK_DECREASE", stock: before.stock, variant: change.id };
    if ((!before || repriced) && now >= sale.startsAt) return { code: "SALE_STARTED" };
    merged.set(change.id, { id: change.id, label: change.label, stock: change.stock, price });
  }
  const variants = [...merged.values()];
  if (variants.length > VARIANT_COUNT.max)
    return { code: "INVALID_VARIANTS", message: `a sale has at most ${VARIANT_COUNT.max} variants` };
  const stock = variants.reduce((sum, v) => sum + v.stock, 0);
  if (stock > MAX_STOCK) return { code: "INVALID_VARIANTS", message: `the variants' stocks add up to more than ${MAX_STOCK}` };
  return { variants, stock };
}

/** The edit as the sale's changes: its queue settings and variants merged over the sale's own. */
async function changesFor(sale: Sale, edit: SaleEdit, now: number): Promise<SaleChanges | EditRefusal> {
  const { queue, variants, ...rest } = edit;
  const changes: SaleChanges = queue ? { ...rest, queue: await waitingRoomFrom(queue, sale.queue) } : rest;
  if (variants === undefined) {
    if (changes.stock !== undefined && sale.variants.length > 0)
      return { code: "INVALID_VARIANTS", message: "this sale's stock is its variants' sum: change a variant's stock" };
    return changes;
  }
  const merged = mergedVariants(sale, variants, now);
  return "code" in merged ? merged : { ...changes, ...merged };
}

/** Why `changes` cannot apply to `sale` now, if they cannot. */
function editProblem(sale: Sale, changes: SaleChanges, now: number): EditRefusal | undefined {
  const next = { ...sale, ...changes };
  const windowMoves = next.startsAt !== sale.startsAt || next.endsAt !== sale.endsAt;
  const admissionMoves =
    changes.admission !== undefined &&
    (changes.admission.rate !== sale.admission.rate || changes.admission.burst !== sale.admission.burst);
  // Isolates keep whether a sale asks for the human check for seconds (src/sales/known-sales.ts):
  // changed only before the start, only an edit in those last seconds meets a buyer early.
  const humanCheckMoves = changes.humanCheck !== undefined && changes.humanCheck !== sale.humanCheck;
  const lanesMove = JSON.stringify(next.lanes) !== JSON.stringify(sale.lanes);
  // From its first lane's start a sale sells, so its window, lanes and door are fixed from then.
  if ((windowMoves || admissionMoves || humanCheckMoves || lanesMove) && now >= opensToBuyersAt(sale)) {
    return { code: "SALE_STARTED" };
  }
  const { seed: _, seedCommitment: __, ...settings } = sale.queue;
  const queueMoves =
    changes.queue !== undefined && Object.entries(settings).some(([k, v]) => changes.queue?.[k as keyof typeof settings] !== v);
  // Joiners already hold tickets of this mode and pace, and a random draw's commitment is out;
  // a lane's own line holds tickets of its lane (docs/lanes.md), so a queued sale's lanes stay too.
  const queued = sale.queue.mode !== "off";
  if ((queueMoves || (queued && lanesMove)) && now >= firstLineOpensAt(sale)) return { code: "QUEUE_OPEN" };
  if (next.stock !== sale.stock) {
    if (next.stock < sale.stock) return { code: "STOCK_DECREASE", stock: sale.stock };
    if (sale.state === "cancelled" || now >= sale.endsAt) return { code: "SALE_CLOSED" };
  }
  // What the draw draws from (its times, beacon, stock, who may enter, the lanes' draws) is fixed once entries open.
  const drawMoves =
    JSON.stringify(next.draw) !== JSON.stringify(sale.draw) || next.stock !== sale.stock || humanCheckMoves || lanesMove;
  if (sale.draw && drawMoves && now >= sale.draw.opensAt) return { code: "DRAW_OPEN" };
  if (windowMoves) {
    const problem = windowProblem(next.startsAt, next.endsAt, now);
    if (problem) return { code: "INVALID_WINDOW", ...problem };
  }
  const drawProblem = drawSettingsProblem(next.draw, next.startsAt, next.queue.mode);
  if (drawProblem) return { code: "INVALID_WINDOW", ...drawProblem };
  if (lanesMove || windowMoves || next.draw !== sale.draw || changes.variants) {
    const ids = next.variants.map((v) => v.id);
    const problem = lanesProblem(next.lanes, next.startsAt, ids.length > 0 ? ids : undefined, next.draw?.closesAt);
    if (problem) return { code: "INVALID_WINDOW", ...problem };
  }
  return undefined;
}

/** Whether `changes` would change anything of `sale` (absent fields change nothing). */
function changesAnything(sale: Sale, changes: SaleChanges): boolean {
  return Object.entries(changes).some(
    ([field, value]) => value !== undefined && JSON.stringify(value) !== JSON.stringify(sale[field as keyof Sale]),
  );
}

/**
 * Edits a sale as recorded in D1: name, description and image at any time; the window and
 * the admission before it starts; stock upward only, until it ends. Optimistic: the sale is
 * read, checked and written only if its version did not move meanwhile (else read again);
 * `ifVersion` (If-Match) makes the caller's own read the one that must still hold. The same
 * edit twice changes nothing the second time (and the version stays).
 */
export async function editSale(
  db: D1Database,
  saleId: string,
  edit: SaleEdit,
  recordLimitBytes: number,
  ifVersion?: number,
  now = Date.now(),
): Promise<{ sale: Sale } | EditRefusal> {
  for (let attempt = 0; attempt < EDIT_ATTEMPTS; attempt++) {
    const sale = await findSale(db, saleId);
    if (!sale) return { code: "SALE_NOT_FOUND" };
    if (ifVersion !== undefined && sale.version !== ifVersion) return { code: "VERSION_MISMATCH", version: sale.version };
    const changes = await changesFor(sale, edit, now);
    if ("code" in changes) return changes;
    if (!changesAnything(sale, changes)) return { sale };
    const problem = editProblem(sale, changes, now);
    if (problem) return problem;
    const byCrowd =
      (changes.queue ?? sale.queue).mode !== "off" || (changes.draw === undefined ? sale.draw : changes.draw) !== null;
    const edited = await updateSale(db, sale, changes, bucketsFor(changes.stock ?? sale.stock, recordLimitBytes, byCrowd));
    if (edited === "NO_ID_SLOT") return { code: "NO_ID_SLOT" };
    if (edited) return { sale: edited };
  }
  return { code: "EDIT_CONFLICT" };
}

/**
 * Pauses, resumes or cancels a sale in D1. The same request twice changes nothing the second
 * time; a cancelled sale is neither paused nor resumed again.
 */
export async function changeSaleState(
  db: D1Database,
  saleId: string,
  state: SaleState,
): Promise<{ sale: Sale } | { code: "SALE_NOT_FOUND" } | { code: "SALE_CANCELLED" }> {
  const sale = await setSaleState(db, saleId, state);
  if (!sale) return { code: "SALE_NOT_FOUND" };
  if (sale.state === "cancelled" && state !== "cancelled") return { code: "SALE_CANCELLED" };
  return { sale };
}
