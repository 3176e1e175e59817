-- Fences that survive a failover (src/locks/d1-fence.ts, docs/locks.md): the holder that
-- wrote with each resource's highest token. A Redis that comes back behind (a failover to a
-- replica that lagged, a restore from an older snapshot) mints again tokens it had already
-- handed out; the same token from another holder is refused like a lower one, so no token is
-- ever accepted from two holders. Rows written before this migration have no holder: the
-- next holder with an equal token is refused, a higher one is recorded.

ALTER TABLE fences ADD COLUMN holder TEXT;

CREATE TRIGGER fences_refuse_reused BEFORE UPDATE OF token ON fences
WHEN NEW.token = OLD.token AND NEW.holder IS NOT OLD.holder
BEGIN
  SELECT RAISE(ABORT, 'fencing token reused by another holder');
END;
