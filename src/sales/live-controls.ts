// An operator's levers during a drop (docs/operating-a-drop.md): pause and resume admission
// from the waiting room, its rate, putting a live sale behind the waiting room, and the notice
// on the sale's pages. Each is one D1 batch: the change (the sale's version grows, so Redis'
// copy follows through lua/sale-sync.lua), its line in the sale's action log (only when
// something changed: the same request twice is one action), and the sale as recorded.
import { fromRow, SALE_COLUMNS, type SaleRow } from "./repository";
import type { Sale } from "./sale";

/** The actions the log records (migrations/0019_drop_operations.sql). */
export type SaleAction = "pause-admission" | "resume-admission" | "admission-rate" | "queue-enabled" | "notice";

/** One line of a sale's action log. */
export interface ActionRecord {
  at: number;
  action: SaleAction;
  /** What the action set, as JSON. */
  detail: string;
  /** Who: the client address the admin token came from. */
  admin: string;
}

const D1_NOW = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

/**
 * Runs `update` (its ?1 is the sale's id, and it changes the row only when something changes),
 * logs `action` when it did, and reads the sale back. undefined: no such sale.
 */
async function changed(
  db: D1Database,
  saleId: string,
  update: D1PreparedStatement,
  action: SaleAction,
  detail: unknown,
  admin: string,
): Promise<{ sale: Sale; changed: boolean } | undefined> {
  const id = Number(saleId);
  const [updated, , read] = await db.batch<SaleRow>([
    update,
    db
      .prepare(
        `INSERT INTO sale_actions (sale_id, at, action, detail, admin) SELECT ?1, ${D1_NOW}, ?2, ?3, ?4 WHERE changes() = 1`,
      )
      .bind(id, action, JSON.stringify(detail), admin),
    db.prepare(`SELECT ${SALE_COLUMNS} FROM sales WHERE id = ?`).bind(id),
  ]);
  const row = read?.results[0];
  return row && { sale: fromRow(row), changed: updated?.meta.changes === 1 };
}

/** Pauses (or resumes) admission from the sale's waiting room; `message`, when given, becomes the sale's notice. */
export const setAdmissionPaused = (db: D1Database, saleId: string, paused: boolean, message: string | undefined, admin: string) =>
  changed(
    db,
    saleId,
    db
      .prepare(
        `UPDATE sales SET queue_paused = ?2, notice = COALESCE(?3, notice), version = version + 1
         WHERE id = ?1 AND queue_mode != 'off' AND (queue_paused != ?2 OR (?3 IS NOT NULL AND notice IS NOT ?3))`,
      )
      .bind(Number(saleId), paused ? 1 : 0, message ?? null),
    paused ? "pause-admission" : "resume-admission",
    message === undefined ? {} : { message },
    admin,
  );

/** The waiting room's ceiling on places let in per second, at any time (lua/waiting-room-progress.lua applies it from its next call). */
export const setAdmitRate = (db: D1Database, saleId: string, admitPerSec: number, admin: string) =>
  changed(
    db,
    saleId,
    db
      .prepare(
        `UPDATE sales SET queue_admit_per_sec = ?2, version = version + 1
         WHERE id = ?1 AND queue_mode != 'off' AND queue_admit_per_sec != ?2`,
      )
      .bind(Number(saleId), admitPerSec),
    "admission-rate",
    { admitPerSec },
    admin,
  );

/**
 * Puts a sale without a waiting room behind one, first come first served from now (D1's clock):
 * from the moment Redis has it, checkout asks for a pass, and places are let in from then on. A
 * sale sold by draw, cancelled or ended is left as it is (the caller says why).
 */
export const enableWaitingRoom = (db: D1Database, saleId: string, admin: string) =>
  changed(
    db,
    saleId,
    db
      .prepare(
        `UPDATE sales SET queue_mode = 'fifo', queue_opened_at = ${D1_NOW}, version = version + 1
         WHERE id = ?1 AND queue_mode = 'off' AND draw_opens_at IS NULL AND state != 'cancelled' AND ends_at > ${D1_NOW}`,
      )
      .bind(Number(saleId)),
    "queue-enabled",
    { mode: "fifo" },
    admin,
  );

/** The notice on every waiting and sale page of the sale; null takes it down. */
export const setNotice = (db: D1Database, saleId: string, notice: string | null, admin: string) =>
  changed(
    db,
    saleId,
    db
      .prepare("UPDATE sales SET notice = ?2, version = version + 1 WHERE id = ?1 AND notice IS NOT ?2")
      .bind(Number(saleId), notice),
    "notice",
    { message: notice },
    admin,
  );

/** The sale's last `limit` actions, newest first. */
export async function recentActions(db: D1Database, saleId: string, limit: number): Promise<ActionRecord[]> {
  const { results } = await db
    .prepare("SELECT at, action, detail, admin FROM sale_actions WHERE sale_id = ? ORDER BY id DESC LIMIT ?")
    .bind(Number(saleId), limit)
    .all<ActionRecord>();
  return results;
}
