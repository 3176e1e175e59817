-- Presale lanes in a sale sold by draw (docs/lanes.md, "Lanes with a draw"): an entry made
-- with a lane's access code is in that lane's draw, drawn apart from the public one, before
-- it, from the lane's own allotment, and offered its units from the lane's start with its code.
-- `lane` is the entry's lane ("" the public draw); `tier` its place in the order the selection
-- walks the draws (the lane's index among the sale's lanes, their count for the public draw, so
-- 0 for every entry of a sale without lanes); `code_hash` the code the offer spends.
ALTER TABLE draw_entries ADD COLUMN lane TEXT NOT NULL DEFAULT '';
ALTER TABLE draw_entries ADD COLUMN tier INTEGER NOT NULL DEFAULT 0;
ALTER TABLE draw_entries ADD COLUMN code_hash TEXT;

-- The selection walks each draw's shuffle in turn, and offers go down the draws open now in
-- that order: both by tier, then shuffle order.
DROP INDEX draw_entries_shuffle;
CREATE INDEX draw_entries_shuffle ON draw_entries (sale_id, tier, shuffle_key, leaf_hash);
DROP INDEX draw_entries_offers;
CREATE INDEX draw_entries_offers ON draw_entries (sale_id, result, tier, shuffle_key, leaf_hash);
