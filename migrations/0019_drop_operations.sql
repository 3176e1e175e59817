-- Running a drop live (docs/operating-a-drop.md): admission paused while everyone keeps their
-- place, a short notice shown on the sale's pages, a live sale put behind the waiting room, and
-- the operators' actions as a log. Each change is D1's first, like every operator's change, and
-- reaches Redis through lua/sale-sync.lua (the sale's version grows).

-- 1: nobody more is let in from the waiting room until resumed (checkout still takes passes held).
ALTER TABLE sales ADD COLUMN queue_paused INTEGER NOT NULL DEFAULT 0 CHECK (queue_paused IN (0, 1));
-- What every waiting and sale page of the sale shows; NULL: nothing. At most 280 characters.
ALTER TABLE sales ADD COLUMN notice TEXT CHECK (notice IS NULL OR length(notice) <= 280);
-- When a live sale without a waiting room was put behind one (epoch ms, D1's clock): joining
-- opens, and places are let in, from then. NULL: the line opens prequeue seconds before the start.
ALTER TABLE sales ADD COLUMN queue_opened_at INTEGER;

-- Each operator's live control of a sale, as it was recorded: when (D1's clock, epoch ms),
-- what, with what, and from which client address the admin token came.
CREATE TABLE sale_actions (
  id      INTEGER PRIMARY KEY AUTOINCREMENT,
  sale_id INTEGER NOT NULL REFERENCES sales (id),
  at      INTEGER NOT NULL,
  action  TEXT    NOT NULL CHECK (action IN ('pause-admission', 'resume-admission', 'admission-rate', 'queue-enabled', 'notice')),
  detail  TEXT    NOT NULL,
  admin   TEXT    NOT NULL
);
CREATE INDEX sale_actions_sale ON sale_actions (sale_id, id);
