// Secrets: set with `wrangler secret put` in production, `.dev.vars` locally. What each one
// does, and every var: src/shared/settings.ts, the only reader of both.
declare namespace Cloudflare {
  interface Env {
    ADMIN_TOKEN: string;
    JWT_SECRET: string;
    ORDER_ID_KEY?: string;
    UPSTASH_REDIS_REST_URL: string;
    UPSTASH_REDIS_REST_TOKEN: string;
    PAYMENT_WEBHOOK_SECRET?: string;
    PAYMENT_WEBHOOK_SECRET_PREVIOUS?: string;
    ORDER_EVENT_SECRETS_KEY?: string;
    TURNSTILE_SECRET_KEY?: string;
    LOCK_QUORUM_NODES?: string;
  }
}
