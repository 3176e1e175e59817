-- Presale lanes and access codes (docs/lanes.md): a sale may open to lanes of code holders
-- before its public start, each lane with an optional allotment of units, and its codes are
-- checked, bound to the first account that uses one and spent in lua/checkout.lua's one step,
-- with the unit. D1 keeps the lanes, the batches (what the console lists and revokes) and the
-- codes' hashes; Redis keeps the live codes (their uses left and who they are bound to), which
-- the script reads and spends.

-- The sale's lanes in start order: [{name, startsAt, stock?, variants?}] (JSON; [] for none).
ALTER TABLE sales ADD COLUMN lanes TEXT NOT NULL DEFAULT '[]';
-- When the sale first sells to anyone: its first lane's start, or starts_at. Order ids are
-- minted from then, so the id slot a sale holds covers [opens_at, ends_at].
ALTER TABLE sales ADD COLUMN opens_at INTEGER NOT NULL DEFAULT 0;
UPDATE sales SET opens_at = starts_at;

CREATE TABLE code_batches (
  id          TEXT    PRIMARY KEY,                 -- cb_<hex>
  sale_id     INTEGER NOT NULL REFERENCES sales (id),
  lane        TEXT    NOT NULL,
  count       INTEGER NOT NULL,
  uses        INTEGER NOT NULL,                    -- uses per code
  expires_at  INTEGER,                             -- epoch ms; NULL: never
  revoked_at  INTEGER,
  created_at  INTEGER NOT NULL
);
CREATE INDEX code_batches_sale ON code_batches (sale_id, created_at);

-- Staff passes past a sale's line, minted with the admin credential for a named user: for
-- whom, when, from which client address, until when (the pass itself is a signed Queue-Pass
-- and is never stored).
CREATE TABLE bypass_passes (
  sale_id     INTEGER NOT NULL REFERENCES sales (id),
  user_id     TEXT    NOT NULL,
  expires_at  INTEGER NOT NULL,
  minted_at   INTEGER NOT NULL,
  minted_from TEXT    NOT NULL,
  PRIMARY KEY (sale_id, user_id, minted_at)
);

-- Each code, hashed (SHA-256 of the sale id and the code as typed, normalised): what a restore
-- of a sale Redis lost rebuilds the codes from; Redis holds the live copy the script spends.
CREATE TABLE access_codes (
  sale_id   INTEGER NOT NULL REFERENCES sales (id),
  code_hash TEXT    NOT NULL,
  batch_id  TEXT    NOT NULL REFERENCES code_batches (id),
  PRIMARY KEY (sale_id, code_hash)
);
CREATE INDEX access_codes_batch ON access_codes (batch_id);

-- The lane an order was bought in and the code it spent (NULL: the public lane), as its
-- message carried them: what a return gives back to, and the console's units per lane.
ALTER TABLE orders ADD COLUMN lane TEXT;
ALTER TABLE orders ADD COLUMN access_code TEXT;
