-- The catalog and sale operations: what a storefront shows of a sale, sales that can be edited,
-- paused, resumed and cancelled, and sales whose Redis keys are archived away once done.

ALTER TABLE sales ADD COLUMN description TEXT NOT NULL DEFAULT '';
ALTER TABLE sales ADD COLUMN image_url TEXT;
-- active, paused (checkout refuses until resumed) or cancelled (for good).
ALTER TABLE sales ADD COLUMN state TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'paused', 'cancelled'));
-- Grows with every edit: a cache entry carries the version it was built from, and an older
-- one never overwrites a newer one.
ALTER TABLE sales ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
-- Set once the sale's Redis keys are gone; its Redis figures then live in sale_archives.
ALTER TABLE sales ADD COLUMN archived_at INTEGER;

-- The catalog lists sales that have not ended, by start.
CREATE INDEX sales_catalog ON sales (ends_at, starts_at, id);
-- The cron puts recently created sales into the Bloom filter of sale ids again.
CREATE INDEX sales_created ON sales (created_at);

-- What the reconciliation report reads from Redis, kept when a sale's keys are removed.
CREATE TABLE sale_archives (
  sale_id     INTEGER PRIMARY KEY REFERENCES sales (id),
  remaining   INTEGER NOT NULL,
  minted      INTEGER NOT NULL,
  buyers      INTEGER NOT NULL,
  returned    INTEGER NOT NULL,
  archived_at INTEGER NOT NULL
);
