-- The expiry sweep's backstop for cancelled sales (src/orders/order-transitions.ts,
-- cancelOrdersOfCancelledSales) starts from the cancelled sales, found here, and reads their
-- orders by sale: it read every order holding units, in every sale, once a minute. A sale's
-- state seldom changes, so the index costs next to no writes.
CREATE INDEX sales_cancelled ON sales (id) WHERE state = 'cancelled';
