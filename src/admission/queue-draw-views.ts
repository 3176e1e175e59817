// What a random sale's published pre-queue shows: the view anyone checks it against, and its
// places a page (a chunk of the tree) at a time.
import { type Sale, saleIsOver } from "../sales/sale";
import type { QueueDrawPlacesPage, QueueDrawView } from "../shared/api-types";
import { findPlacesPage, type QueueDrawRun } from "./queue-draw-records";

/** The seed and its commitment, and once published the count and the root. */
export function queueDrawView(sale: Sale, run: QueueDrawRun | undefined, now = Date.now()): QueueDrawView {
  const ready = run?.phase === "ready";
  return {
    saleId: sale.id,
    state: ready ? "ready" : "pending",
    seedCommitment: sale.queue.seedCommitment,
    seed: saleIsOver(sale, now) ? sale.queue.seed : null,
    drawn: ready ? run.drawn : null,
    placesRoot: ready ? run.placesRoot : null,
    publishedAt: ready && run.publishedAt !== null ? new Date(run.publishedAt).toISOString() : null,
  };
}

/** Page `cursor` of a published line's places (none past the last), and the next page's cursor. */
export async function publishedPlaces(db: D1Database, run: QueueDrawRun, cursor: number): Promise<QueueDrawPlacesPage> {
  const page = await findPlacesPage(db, run, cursor);
  if (!page) return { places: [], next: null };
  const first = cursor * run.pageLeaves + 1;
  return {
    places: page.drawKeys.map((drawKey, i) => ({ place: first + i, drawKey })),
    next: cursor + 1 < run.pages ? String(cursor + 1) : null,
  };
}
