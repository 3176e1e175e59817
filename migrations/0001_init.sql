-- System of record for sales and settled orders. Redis holds the live counters;
-- these tables are what the reconciliation report compares them against.

CREATE TABLE sales (
  -- Random, not sequential: Redis keys are named after it, and a recreated database must
  -- never alias the live state of an older sale with the same id.
  id              INTEGER PRIMARY KEY,
  name            TEXT    NOT NULL,
  stock           INTEGER NOT NULL CHECK (stock > 0),
  starts_at       INTEGER NOT NULL,               -- epoch ms
  ends_at         INTEGER NOT NULL CHECK (ends_at > starts_at),
  -- 12-bit slot baked into order ids; no two sales with overlapping windows share one
  -- (see src/orders/order-id.ts).
  id_slot         INTEGER NOT NULL CHECK (id_slot BETWEEN 0 AND 4095),
  admit_rate      INTEGER NOT NULL,               -- token-bucket refill, checkouts/s
  admit_burst     INTEGER NOT NULL,               -- token-bucket capacity
  -- Settled orders; the DB-level guard that D1 never records an oversell.
  sold            INTEGER NOT NULL DEFAULT 0,
  idempotency_key TEXT UNIQUE,
  created_at      INTEGER NOT NULL,
  CHECK (sold <= stock)
);
CREATE INDEX sales_slot_window ON sales (id_slot, starts_at, ends_at);

CREATE TABLE orders (
  order_id   TEXT    PRIMARY KEY,                  -- 64-bit id as a decimal string
  sale_id    INTEGER NOT NULL REFERENCES sales (id),
  user_id    TEXT    NOT NULL,
  created_at INTEGER NOT NULL,                     -- Redis server time of the reservation
  settled_at INTEGER NOT NULL,
  UNIQUE (sale_id, user_id)
);

-- Orders that could never settle; their units went back to stock.
CREATE TABLE failed_orders (
  order_id   TEXT    PRIMARY KEY,
  sale_id    INTEGER NOT NULL REFERENCES sales (id),
  user_id    TEXT    NOT NULL,
  reason     TEXT    NOT NULL,
  created_at INTEGER NOT NULL,
  failed_at  INTEGER NOT NULL
);
CREATE INDEX failed_orders_sale ON failed_orders (sale_id);

-- Counting in a trigger keeps the guard inside the same statement as the insert:
-- an insert that would push sold past stock aborts, and so does its whole batch.
CREATE TRIGGER orders_count_sold AFTER INSERT ON orders
BEGIN
  UPDATE sales SET sold = sold + 1 WHERE id = NEW.sale_id;
END;

-- A failed (released) order must never settle later through a stale redelivery.
CREATE TRIGGER orders_skip_failed BEFORE INSERT ON orders
WHEN EXISTS (SELECT 1 FROM failed_orders WHERE order_id = NEW.order_id)
BEGIN
  SELECT RAISE(IGNORE);
END;
