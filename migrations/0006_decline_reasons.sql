-- A declined payment keeps the provider's reason, so a retry with the same Idempotency-Key
-- is answered with the same words as the first attempt.
ALTER TABLE payments ADD COLUMN decline_reason TEXT;
