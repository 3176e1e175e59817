-- Variants: a sale may come in sizes, colours or tiers, each with its own stock and
-- optionally its own price; one per-buyer limit spans them all. A sale without rows here has
-- one implicit variant, "default", whose stock is the sale's (sales.stock), as before.

CREATE TABLE sale_variants (
  sale_id    INTEGER NOT NULL REFERENCES sales (id),
  variant_id TEXT    NOT NULL,                      -- the admin's id, 1-32 of [A-Za-z0-9._-]
  label      TEXT    NOT NULL,
  stock      INTEGER NOT NULL CHECK (stock > 0),
  price      INTEGER CHECK (price >= 0),            -- minor units; NULL: the sale's price
  position   INTEGER NOT NULL,                      -- the order the admin listed them in
  -- Units held (awaiting payment, paid, confirmed): D1's guard that no variant is oversold,
  -- as sales.sold guards the whole sale (sales.stock is the variants' sum).
  sold       INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (sale_id, variant_id),
  CHECK (sold <= stock)
);

-- Which variant an order (or a failed one) is of; "default" for a sale without variants.
ALTER TABLE orders ADD COLUMN variant TEXT NOT NULL DEFAULT 'default';
ALTER TABLE failed_orders ADD COLUMN variant TEXT NOT NULL DEFAULT 'default';

-- Counted in the statement that changes the order, like sales.sold: an insert that would push a
-- variant past its stock aborts (and its whole batch); an order that ends gives its units back.
CREATE TRIGGER orders_count_variant_sold AFTER INSERT ON orders
WHEN NEW.status IN ('awaiting_payment', 'paid', 'confirmed')
BEGIN
  UPDATE sale_variants SET sold = sold + NEW.quantity WHERE sale_id = NEW.sale_id AND variant_id = NEW.variant;
END;

CREATE TRIGGER orders_uncount_variant_sold AFTER UPDATE OF status ON orders
WHEN OLD.status IN ('awaiting_payment', 'paid', 'confirmed') AND NEW.status IN ('expired', 'cancelled')
BEGIN
  UPDATE sale_variants SET sold = sold - NEW.quantity WHERE sale_id = NEW.sale_id AND variant_id = NEW.variant;
END;

-- Order events carry the variant: the snapshot view and the failed order's trigger again, with it.
DROP VIEW order_snapshots;
CREATE VIEW order_snapshots AS
SELECT order_id,
       json_object('order_id', order_id, 'sale_id', sale_id, 'user_id', user_id, 'status', status,
                   'quantity', quantity, 'variant', variant, 'amount', amount, 'currency', currency,
                   'expires_at', expires_at, 'refund_due', refund_due) AS snapshot
FROM orders;

DROP TRIGGER order_events_failed;
CREATE TRIGGER order_events_failed AFTER INSERT ON failed_orders
BEGIN
  INSERT INTO order_events (id, type, subject, sale_id, snapshot, created_at)
  SELECT 'evt_' || lower(hex(randomblob(12))), 'order.failed', NEW.order_id, NEW.sale_id,
         json_object('order_id', NEW.order_id, 'sale_id', NEW.sale_id, 'user_id', NEW.user_id, 'status', 'failed',
                     'quantity', NEW.quantity, 'variant', NEW.variant,
                     'amount', COALESCE(v.price, s.price) * NEW.quantity, 'currency', s.currency,
                     'expires_at', NULL, 'refund_due', 0),
         CAST(unixepoch('subsec') * 1000 AS INTEGER)
  FROM sales s LEFT JOIN sale_variants v ON v.sale_id = s.id AND v.variant_id = NEW.variant
  WHERE s.id = NEW.sale_id;
END;

-- An archived sale keeps what was left of each variant (JSON: variant id -> units; NULL for a
-- sale without variants), as it keeps the total.
ALTER TABLE sale_archives ADD COLUMN remaining_by_variant TEXT;
