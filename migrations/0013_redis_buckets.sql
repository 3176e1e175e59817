-- Big keys: a sale's per-buyer and per-order Redis records are split into this many buckets
-- (src/shared/keys.ts, bucketsFor), chosen when the sale is created for its stock and the
-- Redis record limit; raised with the stock only before anyone can join or buy. Sales made
-- before the split keep one bucket: the key names they always had.
ALTER TABLE sales ADD COLUMN redis_buckets INTEGER NOT NULL DEFAULT 1 CHECK (redis_buckets >= 1);
