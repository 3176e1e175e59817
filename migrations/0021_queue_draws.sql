-- A random sale's pre-queue, published once the sale is over and its seed revealed (docs/api.md,
-- "Verifying a draw"): each place with its holder's draw key (no user ids), in pages that are
-- the aligned chunks of an RFC 6962 Merkle tree, and the tree's root; one of each per line of
-- its waiting room (the public line, and each presale lane's own). Built in bounded steps
-- through the jobs queue (src/admission/queue-draw-run.ts): each step writes its page and moves
-- the run in one batch, so a step cut short is done again, to the same page.

-- Where a line's publication stands. phase: count (each bucket's range of the pre-queue
-- counted), pages (a page of places at a time), ready (the root published). A sale's lines
-- are started together, in one batch.
CREATE TABLE queue_draw_runs (
  sale_id      INTEGER NOT NULL REFERENCES sales (id),
  line         TEXT    NOT NULL,            -- '' the public line, else the presale lane whose own line it is
  phase        TEXT    NOT NULL CHECK (phase IN ('count', 'pages', 'ready')),
  page_leaves  INTEGER NOT NULL,            -- places a page holds, a power of two (the last page may hold fewer)
  sizes        TEXT,                        -- from pages on: each bucket's size of the pre-queue as counted (JSON array)
  drawn        INTEGER NOT NULL DEFAULT 0,  -- the pre-queue's places
  pages        INTEGER NOT NULL DEFAULT 0,  -- pages written
  places_root  TEXT,                        -- once ready: the Merkle root over every place, hex
  published_at INTEGER,
  updated_at   INTEGER NOT NULL,
  PRIMARY KEY (sale_id, line)
);

-- The pages, in place order: page p holds places p * page_leaves + 1 on.
CREATE TABLE queue_draw_pages (
  sale_id   INTEGER NOT NULL REFERENCES sales (id),
  line      TEXT    NOT NULL,
  page      INTEGER NOT NULL,
  draw_keys TEXT    NOT NULL,  -- each place's draw key in order, 64 hex characters each, one after another
  root      TEXT    NOT NULL,  -- the page's own root (its subtree's), hex
  PRIMARY KEY (sale_id, line, page)
);
