-- The key that picks a buyer's bucket among the sale's (src/shared/keys.ts, BucketSplit): 16
-- random bytes, hex, made with the sale, so nobody who chooses user ids can aim them at one
-- bucket. Sales made before have none: their buyers stay where the unkeyed hash put them.
ALTER TABLE sales ADD COLUMN bucket_key TEXT CHECK (bucket_key IS NULL OR length(bucket_key) = 32);
