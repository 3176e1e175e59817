-- What an Idempotency-Key was first used with: the SHA-256 of the validated request body as
-- canonical JSON. A later request with the same key and another body is refused (422)
-- instead of quietly answering with the first sale. NULL for sales created before it.
ALTER TABLE sales ADD COLUMN idempotency_fingerprint TEXT;
