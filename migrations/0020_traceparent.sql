-- The W3C traceparent of the request that reserved each order (src/shared/trace.ts), carried
-- in its queue message and outbox record: one order followed from its request to its row.
-- NULL for orders settled before traces were kept.
ALTER TABLE orders ADD COLUMN traceparent TEXT;
