-- Fencing tokens (src/locks/d1-fence.ts): the highest token each resource has seen. A
-- holder whose lock lapsed writes with a token lower than its successor's; the trigger
-- aborts that statement and, D1 batches being transactions, the writes batched with it.

CREATE TABLE fences (
  resource   TEXT    PRIMARY KEY,
  token      INTEGER NOT NULL,
  updated_at INTEGER NOT NULL               -- epoch ms of the last fenced write
);

CREATE TRIGGER fences_refuse_stale BEFORE UPDATE OF token ON fences
WHEN NEW.token < OLD.token
BEGIN
  SELECT RAISE(ABORT, 'stale fencing token');
END;
