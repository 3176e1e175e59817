-- A sale's waiting room (src/admission/): its mode and pace, and the seed whose SHA-256 is
-- published before joining opens and which orders a random sale's pre-queue. The seed is
-- random per sale and revealed on the public sale once it ends.
ALTER TABLE sales ADD COLUMN queue_mode TEXT NOT NULL DEFAULT 'off' CHECK (queue_mode IN ('off', 'fifo', 'random'));
ALTER TABLE sales ADD COLUMN queue_prequeue_sec INTEGER NOT NULL DEFAULT 900;
ALTER TABLE sales ADD COLUMN queue_admit_per_sec INTEGER NOT NULL DEFAULT 100;
ALTER TABLE sales ADD COLUMN queue_pass_ttl_sec INTEGER NOT NULL DEFAULT 300;
-- 32 random bytes, hex; and its SHA-256, hex. Sales made before the waiting room have none
-- (they are "off" and can be turned to fifo, not random).
ALTER TABLE sales ADD COLUMN queue_seed TEXT;
ALTER TABLE sales ADD COLUMN queue_seed_commitment TEXT;
