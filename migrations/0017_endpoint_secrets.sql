-- Endpoint signing secrets at rest, and their rotation (src/orders/endpoint-secrets.ts).
--
-- event_endpoints.secret now holds the secret sealed with AES-256-GCM under the Worker secret
-- ORDER_EVENT_SECRETS_KEY (`aes1.<iv>.<ciphertext>`), so an export of this database holds no
-- secret a shop verifies events with. An endpoint's secret from before is `whsec_...` in plain
-- text: it keeps signing, and the Worker's cron seals it within a minute of running with the
-- key (SQL cannot: the key is the Worker's). A rotation keeps the secret it replaced, sealed,
-- in previous_secret until previous_secret_until (epoch ms): until then each delivery carries
-- both signatures; the cron then forgets it.
ALTER TABLE event_endpoints ADD COLUMN previous_secret TEXT;
ALTER TABLE event_endpoints ADD COLUMN previous_secret_until INTEGER;
