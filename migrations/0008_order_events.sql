-- Order events and the order lists.
--
-- Order events: what the shop's backend is told (order.paid, order.expired, ...), signed and
-- retried, at the endpoints the admin registers. The events are written by triggers, in the
-- statement that changes the order or the sale: an event is recorded exactly when its change
-- commits, never for a change that was refused (an UPDATE that matched nothing fires nothing),
-- and never lost between the change and the send (the outbox is the table itself).

CREATE TABLE event_endpoints (
  id          TEXT    PRIMARY KEY,                 -- ep_<hex>
  url         TEXT    NOT NULL,
  secret      TEXT    NOT NULL,                    -- whsec_<base64>, shown once
  events      TEXT    NOT NULL,                    -- JSON array of event types
  description TEXT    NOT NULL DEFAULT '',
  enabled     INTEGER NOT NULL DEFAULT 1,
  disabled_reason TEXT,                            -- e.g. the endpoint answered 410
  created_at  INTEGER NOT NULL
);

-- The outbox: one row per state change, in order of occurrence (seq).
CREATE TABLE order_events (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  id         TEXT    NOT NULL UNIQUE,              -- evt_<hex>: the webhook-id of every attempt
  type       TEXT    NOT NULL,
  subject    TEXT    NOT NULL,                     -- the order id, or sale:<id> for sale events
  sale_id    INTEGER NOT NULL,
  snapshot   TEXT    NOT NULL,                     -- the order (or sale) row as the change left it, JSON
  created_at INTEGER NOT NULL
);

-- One delivery per event and subscribed endpoint, made when the event is (same statement).
CREATE TABLE event_deliveries (
  id              TEXT    PRIMARY KEY,             -- dlv_<hex>
  endpoint_id     TEXT    NOT NULL REFERENCES event_endpoints (id),
  event_seq       INTEGER NOT NULL REFERENCES order_events (seq),
  subject         TEXT    NOT NULL,
  status          TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  lease_until     INTEGER NOT NULL DEFAULT 0,      -- a sender holds it until then
  last_status     INTEGER,                         -- the endpoint's last answer code (NULL: no answer)
  last_error      TEXT,
  updated_at      INTEGER NOT NULL
);
CREATE INDEX event_deliveries_due ON event_deliveries (status, next_attempt_at);
-- In order per subject per endpoint: the earliest undelivered one goes first.
CREATE INDEX event_deliveries_subject ON event_deliveries (endpoint_id, subject, event_seq);
CREATE INDEX event_deliveries_endpoint ON event_deliveries (endpoint_id, event_seq);

CREATE TABLE delivery_attempts (
  delivery_id  TEXT    NOT NULL REFERENCES event_deliveries (id),
  attempted_at INTEGER NOT NULL,
  status_code  INTEGER,                            -- NULL: no answer (refused, timed out)
  error        TEXT
);
CREATE INDEX delivery_attempts_delivery ON delivery_attempts (delivery_id, attempted_at);

-- Fan-out: every enabled endpoint subscribed to the type gets a delivery.
CREATE TRIGGER order_events_fan_out AFTER INSERT ON order_events
BEGIN
  INSERT INTO event_deliveries (id, endpoint_id, event_seq, subject, next_attempt_at, updated_at)
  SELECT 'dlv_' || lower(hex(randomblob(12))), e.id, NEW.seq, NEW.subject, NEW.created_at, NEW.created_at
  FROM event_endpoints e
  WHERE e.enabled = 1 AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE value = NEW.type);
END;

-- The order as the change left it (the columns GET /api/orders/:orderId shows), read by the
-- AFTER triggers below once the row is written.
CREATE VIEW order_snapshots AS
SELECT order_id,
       json_object('order_id', order_id, 'sale_id', sale_id, 'user_id', user_id, 'status', status,
                   'quantity', quantity, 'amount', amount, 'currency', currency,
                   'expires_at', expires_at, 'refund_due', refund_due) AS snapshot
FROM orders;

CREATE TRIGGER order_events_recorded AFTER INSERT ON orders
BEGIN
  INSERT INTO order_events (id, type, subject, sale_id, snapshot, created_at)
  SELECT 'evt_' || lower(hex(randomblob(12))), t.type, NEW.order_id, NEW.sale_id,
         o.snapshot, CAST(unixepoch('subsec') * 1000 AS INTEGER)
  FROM order_snapshots o, (SELECT 1 AS n, 'order.reserved' AS type
        UNION ALL SELECT 2, 'order.awaiting_payment' WHERE NEW.status = 'awaiting_payment'
        UNION ALL SELECT 2, 'order.cancelled' WHERE NEW.status = 'cancelled') t
  WHERE o.order_id = NEW.order_id
  ORDER BY t.n;
END;

-- One trigger for both columns, so a paid order cancelled with its sale reports
-- order.cancelled before order.refund_due (SQLite orders separate triggers as it likes).
CREATE TRIGGER order_events_changed AFTER UPDATE OF status, refund_due ON orders
WHEN (NEW.status != OLD.status AND NEW.status IN ('paid', 'expired', 'cancelled')) OR (NEW.refund_due = 1 AND OLD.refund_due = 0)
BEGIN
  INSERT INTO order_events (id, type, subject, sale_id, snapshot, created_at)
  SELECT 'evt_' || lower(hex(randomblob(12))), t.type, NEW.order_id, NEW.sale_id,
         o.snapshot, CAST(unixepoch('subsec') * 1000 AS INTEGER)
  FROM order_snapshots o, (SELECT 1 AS n, 'order.' || NEW.status AS type
          WHERE NEW.status != OLD.status AND NEW.status IN ('paid', 'expired', 'cancelled')
        UNION ALL SELECT 2, 'order.refund_due' WHERE NEW.refund_due = 1 AND OLD.refund_due = 0) t
  WHERE o.order_id = NEW.order_id
  ORDER BY t.n;
END;

CREATE TRIGGER order_events_failed AFTER INSERT ON failed_orders
BEGIN
  INSERT INTO order_events (id, type, subject, sale_id, snapshot, created_at)
  SELECT 'evt_' || lower(hex(randomblob(12))), 'order.failed', NEW.order_id, NEW.sale_id,
         json_object('order_id', NEW.order_id, 'sale_id', NEW.sale_id, 'user_id', NEW.user_id, 'status', 'failed',
                     'quantity', NEW.quantity, 'amount', s.price * NEW.quantity, 'currency', s.currency,
                     'expires_at', NULL, 'refund_due', 0),
         CAST(unixepoch('subsec') * 1000 AS INTEGER)
  FROM sales s WHERE s.id = NEW.sale_id;
END;

-- Sale events carry the sale's id, name and figures.
CREATE VIEW sale_snapshots AS
SELECT id AS sale_id,
       json_object('sale_id', id, 'name', name, 'stock', stock, 'sold', sold, 'state', state,
                   'starts_at', starts_at, 'ends_at', ends_at) AS snapshot
FROM sales;

CREATE TRIGGER order_events_sold_out AFTER UPDATE OF sold ON sales
WHEN NEW.sold = NEW.stock AND OLD.sold < OLD.stock
BEGIN
  INSERT INTO order_events (id, type, subject, sale_id, snapshot, created_at)
  SELECT 'evt_' || lower(hex(randomblob(12))), 'sale.sold_out', 'sale:' || NEW.id, NEW.id,
         s.snapshot, CAST(unixepoch('subsec') * 1000 AS INTEGER)
  FROM sale_snapshots s WHERE s.sale_id = NEW.id;
END;

-- A sale ends when it is cancelled, or when its window closes: the cron reports those
-- (src/orders/event-deliveries.ts), once each, looking for the sale.ended already there.
CREATE TRIGGER order_events_sale_cancelled AFTER UPDATE OF state ON sales
WHEN NEW.state = 'cancelled' AND OLD.state != 'cancelled'
  AND NOT EXISTS (SELECT 1 FROM order_events WHERE subject = 'sale:' || NEW.id AND type = 'sale.ended')
BEGIN
  INSERT INTO order_events (id, type, subject, sale_id, snapshot, created_at)
  SELECT 'evt_' || lower(hex(randomblob(12))), 'sale.ended', 'sale:' || NEW.id, NEW.id,
         s.snapshot, CAST(unixepoch('subsec') * 1000 AS INTEGER)
  FROM sale_snapshots s WHERE s.sale_id = NEW.id;
END;
CREATE INDEX order_events_subject ON order_events (subject, type);

-- The order lists, newest first: a sale's (GET /admin/sales/:saleId/orders and its CSV export)
-- and a buyer's across sales (GET /api/orders).
CREATE INDEX orders_sale_created ON orders (sale_id, created_at, order_id);
CREATE INDEX orders_user_created ON orders (user_id, created_at, order_id);
CREATE INDEX failed_orders_user ON failed_orders (user_id);
