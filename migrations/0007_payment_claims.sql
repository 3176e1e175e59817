-- One payment attempt in flight per order. Payment providers deduplicate by idempotency key
-- only, so two attempts with two keys would be two charges: before calling the provider, an
-- attempt claims its order with one conditional UPDATE, and another key is refused while the
-- claim is held. The claim is released when the attempt ends (declined, or paid, or its charge
-- recorded for refund); an attempt whose outcome is unknown (its provider call timed out)
-- keeps it until a retry with its key learns the outcome. The claim never delays the expiry:
-- once the window closes nothing can pay the order anyway.
ALTER TABLE orders ADD COLUMN payment_claim TEXT;        -- the Idempotency-Key of the attempt holding the claim
ALTER TABLE orders ADD COLUMN payment_claimed_at INTEGER; -- when that attempt last called the provider (D1's clock)
