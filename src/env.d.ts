// Secrets: set with `wrangler secret put` in production, `.dev.vars` locally.
declare namespace Cloudflare {
  interface Env {
    ADMIN_TOKEN: string;
    JWT_SECRET: string;
    UPSTASH_REDIS_REST_URL: string;
    UPSTASH_REDIS_REST_TOKEN: string;
    /** Verifies POST /webhooks/payments (HMAC-SHA256); unset turns the webhook route off. */
    PAYMENT_WEBHOOK_SECRET?: string;
    /** During a rotation of the provider's secret, the one it replaces: signatures with either pass. */
    PAYMENT_WEBHOOK_SECRET_PREVIOUS?: string;
    /** Turnstile's secret for sales with humanCheck; unset refuses every token (fail closed). */
    TURNSTILE_SECRET_KEY?: string;
    /** Quorum locks (the lab's redlock): JSON [{"url": "...", "token": "..."}, ...], one per independent database. */
    LOCK_QUORUM_NODES?: string;
  }
}
