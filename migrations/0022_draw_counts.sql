-- A draw's counts per variant, kept as the run decides them (docs/draws.md): the public view
-- (GET /api/sales/:saleId/draw) reads these few rows instead of counting the committed list,
-- a million rows read per uncached view of a million-entry draw. The tree step adds each
-- chunk's entries, the select step each page's selected and waitlisted entries, in the batch
-- that moves the run on and only while the run stands where the step read it, so a step done
-- twice adds once. Offers going down the waitlist change no entry's result: the counts stay.
CREATE TABLE draw_counts (
  sale_id    INTEGER NOT NULL REFERENCES sales (id),
  variant    TEXT    NOT NULL,
  entries    INTEGER NOT NULL DEFAULT 0,  -- committed entries (those the tree has passed)
  selected   INTEGER NOT NULL DEFAULT 0,  -- entries selected (by the pages selected so far)
  waitlisted INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (sale_id, variant)
);

-- Runs already under way: what their steps so far decided, counted once from the list (the
-- tree's leaves up to its cursor, the results of the pages selected).
INSERT INTO draw_counts (sale_id, variant, entries, selected, waitlisted)
SELECT e.sale_id, e.variant, COUNT(*), SUM(e.result IS 'selected'), SUM(e.result IS 'waitlisted')
FROM draw_entries e JOIN draw_runs r ON r.sale_id = e.sale_id
WHERE r.phase IN ('beacon', 'shuffle', 'select', 'drawn') OR (r.phase = 'tree' AND e.leaf_hash <= r.cursor)
GROUP BY e.sale_id, e.variant;
