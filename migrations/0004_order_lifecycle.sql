-- After the 202: a payment window per sale, orders that are paid, expire or are cancelled
-- (their units going back on sale), quantities, and payments recorded once.

-- Sale options. Sales recorded before this keep today's behaviour: no payment step.
ALTER TABLE sales ADD COLUMN price INTEGER NOT NULL DEFAULT 0 CHECK (price >= 0);        -- minor units
ALTER TABLE sales ADD COLUMN currency TEXT NOT NULL DEFAULT 'USD';
ALTER TABLE sales ADD COLUMN payment_window_sec INTEGER NOT NULL DEFAULT 0 CHECK (payment_window_sec BETWEEN 0 AND 3600);
ALTER TABLE sales ADD COLUMN per_user_limit INTEGER NOT NULL DEFAULT 1 CHECK (per_user_limit BETWEEN 1 AND 10);

-- Failed orders carry their quantity too: their units went back on sale.
ALTER TABLE failed_orders ADD COLUMN quantity INTEGER NOT NULL DEFAULT 1;

-- `sold` now counts units held (awaiting payment, paid, confirmed), and CHECK (sold <= stock)
-- keeps guarding it.

-- Orders gain a state. A buyer may hold several orders of a sale (up to per_user_limit units),
-- so UNIQUE (sale_id, user_id) gives way to a trigger that guards the limit; SQLite cannot drop
-- a constraint, hence the rebuild.
CREATE TABLE orders_v2 (
  order_id    TEXT    PRIMARY KEY,                 -- 64-bit id as a decimal string
  sale_id     INTEGER NOT NULL REFERENCES sales (id),
  user_id     TEXT    NOT NULL,
  quantity    INTEGER NOT NULL DEFAULT 1 CHECK (quantity BETWEEN 1 AND 10),
  amount      INTEGER NOT NULL DEFAULT 0,          -- price x quantity, minor units
  currency    TEXT    NOT NULL DEFAULT 'USD',
  status      TEXT    NOT NULL CHECK (status IN ('awaiting_payment', 'paid', 'expired', 'cancelled', 'confirmed')),
  created_at  INTEGER NOT NULL,                    -- Redis server time of the reservation
  settled_at  INTEGER NOT NULL,
  expires_at  INTEGER,                             -- awaiting_payment: when the payment window closes
  closed_at   INTEGER,                             -- when it became paid, expired or cancelled
  returned_at INTEGER,                             -- expired or cancelled: when its units were back in Redis
  paid_ref    TEXT,                                -- what paid it (a pay attempt or a webhook event), so a retry knows its own
  refund_due  INTEGER NOT NULL DEFAULT 0           -- a charge landed that must be refunded
);
INSERT INTO orders_v2 (order_id, sale_id, user_id, status, created_at, settled_at)
  SELECT order_id, sale_id, user_id, 'confirmed', created_at, settled_at FROM orders;
DROP TRIGGER orders_count_sold;
DROP TRIGGER orders_skip_failed;
DROP TABLE orders;
ALTER TABLE orders_v2 RENAME TO orders;

CREATE INDEX orders_sale_user ON orders (sale_id, user_id);
-- The sweep: awaiting orders past their deadline, and ended orders whose units are not back yet.
CREATE INDEX orders_due ON orders (status, expires_at);
CREATE INDEX orders_unreturned ON orders (status, returned_at);

-- A failed (released) order must never settle later through a stale redelivery.
CREATE TRIGGER orders_skip_failed BEFORE INSERT ON orders
WHEN EXISTS (SELECT 1 FROM failed_orders WHERE order_id = NEW.order_id)
BEGIN
  SELECT RAISE(IGNORE);
END;

-- The per-buyer limit, guarded where the order is recorded, as sold <= stock is. A repeated
-- insert of an order already there, or of a failed one, is not a new hold.
CREATE TRIGGER orders_per_user_limit BEFORE INSERT ON orders
WHEN NEW.status IN ('awaiting_payment', 'paid', 'confirmed')
  AND NOT EXISTS (SELECT 1 FROM orders WHERE order_id = NEW.order_id)
  AND NOT EXISTS (SELECT 1 FROM failed_orders WHERE order_id = NEW.order_id)
  AND NEW.quantity + (SELECT COALESCE(SUM(quantity), 0) FROM orders
                      WHERE sale_id = NEW.sale_id AND user_id = NEW.user_id
                        AND status IN ('awaiting_payment', 'paid', 'confirmed'))
      > (SELECT per_user_limit FROM sales WHERE id = NEW.sale_id)
BEGIN
  SELECT RAISE(ABORT, 'per-user limit exceeded');
END;

-- Units held, counted in the statement that changes them: an insert that would push sold past
-- stock aborts (and its whole batch); an order that ends gives its units back.
CREATE TRIGGER orders_count_sold AFTER INSERT ON orders
WHEN NEW.status IN ('awaiting_payment', 'paid', 'confirmed')
BEGIN
  UPDATE sales SET sold = sold + NEW.quantity WHERE id = NEW.sale_id;
END;

CREATE TRIGGER orders_uncount_sold AFTER UPDATE OF status ON orders
WHEN OLD.status IN ('awaiting_payment', 'paid', 'confirmed') AND NEW.status IN ('expired', 'cancelled')
BEGIN
  UPDATE sales SET sold = sold - NEW.quantity WHERE id = NEW.sale_id;
END;

-- Pay attempts, one per (order, Idempotency-Key): a retry with the same key and body gets the
-- same answer and never charges twice; the same key with another body is refused.
CREATE TABLE payments (
  order_id        TEXT    NOT NULL,
  idempotency_key TEXT    NOT NULL,
  fingerprint     TEXT    NOT NULL,                -- SHA-256 of the request body
  status          TEXT    NOT NULL CHECK (status IN ('charging', 'succeeded', 'declined', 'refund_due')),
  provider_ref    TEXT,
  created_at      INTEGER NOT NULL,
  updated_at      INTEGER NOT NULL,
  PRIMARY KEY (order_id, idempotency_key)
);

-- Signed webhook events, each applied once: a replayed event id changes nothing.
CREATE TABLE payment_events (
  event_id    TEXT    PRIMARY KEY,
  order_id    TEXT    NOT NULL,
  type        TEXT    NOT NULL,
  received_at INTEGER NOT NULL,
  applied     INTEGER NOT NULL DEFAULT 0,
  outcome     TEXT                                  -- what applying it did
);
