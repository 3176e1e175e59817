-- A sale's recovery from a Redis that lost it or came back behind D1 (src/settlement/recovery.ts).
-- Kept in D1, not Redis: it must survive the very loss it records. No row: the sale never
-- needed one, it is live.
CREATE TABLE sale_recovery (
  sale_id     INTEGER PRIMARY KEY REFERENCES sales (id),
  state       TEXT    NOT NULL CHECK (state IN ('behind', 'rebuilding', 'live')),
  detected_at INTEGER,                             -- epoch ms, the latest detection
  detected_by TEXT,                                -- what noticed: checkout, settlement, cron
  -- The highest order sequence anyone reported minted before the loss: the rebuild waits
  -- until D1 has landed that many ids, and numbers new ones above it.
  known_seq   INTEGER NOT NULL DEFAULT 0,
  -- What the rebuilt sequence was ahead of D1's count of ids (ids minted that never landed):
  -- D1's count plus this is what the sequence stands at when everything minted has landed.
  seq_offset  INTEGER NOT NULL DEFAULT 0,
  rebuilt_at  INTEGER,                             -- epoch ms, the latest rebuild
  rebuilds    INTEGER NOT NULL DEFAULT 0
);
