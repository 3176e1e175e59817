-- Draws: a sale sold by draw takes entries between draw_opens_at and draw_closes_at (in Redis,
-- one round trip each), then commits them as a Merkle tree, shuffles them with the sale's
-- seed and a public beacon's value, and offers the units to the winners from the sale's
-- start (docs/draws.md). The draw runs in bounded steps through the jobs queue; each step
-- writes its results and moves the run's cursor in one batch, so a crash resumes where the
-- last batch left it, to the same result.

ALTER TABLE sales ADD COLUMN draw_opens_at INTEGER;   -- epoch ms; NULL: not a draw
ALTER TABLE sales ADD COLUMN draw_closes_at INTEGER;
ALTER TABLE sales ADD COLUMN draw_beacon_url TEXT;     -- a drand-style beacon's base URL, or NULL
ALTER TABLE sales ADD COLUMN draw_beacon_round INTEGER;

-- Where a sale's draw stands. phase: collect (entries read from Redis, bucket by bucket),
-- tree (the Merkle root built a chunk at a time), beacon (waiting for the round), shuffle
-- (each entry's shuffle key), select (winners, in shuffle order), drawn.
CREATE TABLE draw_runs (
  sale_id           INTEGER PRIMARY KEY REFERENCES sales (id),
  phase             TEXT    NOT NULL CHECK (phase IN ('collect', 'tree', 'beacon', 'shuffle', 'select', 'drawn')),
  bucket            INTEGER NOT NULL DEFAULT 0,     -- collect: the bucket being scanned
  cursor            TEXT    NOT NULL DEFAULT '',    -- collect: HSCAN's; tree, shuffle: the last leaf hash; select: the last shuffle key
  chunks            INTEGER NOT NULL DEFAULT 0,     -- tree: chunks done
  entries           INTEGER NOT NULL DEFAULT 0,     -- committed entries
  entries_root      TEXT,                           -- after the tree: the Merkle root, hex
  committed_at      INTEGER,
  beacon_randomness TEXT,                           -- the beacon round's randomness, hex
  selection         TEXT,                           -- select: the state carried between pages (JSON)
  drawn_at          INTEGER,
  updated_at        INTEGER NOT NULL
);

-- The committed entries, one row each; the tree's order is leaf_hash ascending. user_id and
-- receipt stay private: the public list shows entrant (a hash of both), variant and quantity.
CREATE TABLE draw_entries (
  sale_id     INTEGER NOT NULL REFERENCES sales (id),
  leaf_hash   TEXT    NOT NULL,
  entrant     TEXT    NOT NULL,
  user_id     TEXT    NOT NULL,
  receipt     TEXT    NOT NULL,
  variant     TEXT    NOT NULL,
  quantity    INTEGER NOT NULL,
  entered_at  INTEGER NOT NULL,
  shuffle_key TEXT,                                 -- HMAC-SHA256(draw key, leaf hash), hex
  result      TEXT CHECK (result IN ('selected', 'waitlisted')),  -- NULL: not selected (or not drawn yet)
  order_id    TEXT,                                 -- the order offered to the entry
  PRIMARY KEY (sale_id, leaf_hash),
  UNIQUE (sale_id, user_id)
);
CREATE INDEX draw_entries_shuffle ON draw_entries (sale_id, shuffle_key);
-- Offers go down each variant's list in shuffle order.
CREATE INDEX draw_entries_offers ON draw_entries (sale_id, result, variant, shuffle_key);

-- The Merkle tree's aligned chunks (CHUNK_LEAVES leaves each, the last one possibly fewer):
-- the first leaf hash of each, for finding a leaf's index, and each chunk's root.
CREATE TABLE draw_chunks (
  sale_id    INTEGER NOT NULL REFERENCES sales (id),
  chunk      INTEGER NOT NULL,
  first_leaf TEXT    NOT NULL,
  leaves     INTEGER NOT NULL,
  root       TEXT    NOT NULL,
  PRIMARY KEY (sale_id, chunk)
);
