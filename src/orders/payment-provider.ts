import type { Redis } from "../redis/client";

/** One charge, as the pay route asks a provider for it. */
export interface ChargeRequest {
  orderId: string;
  amount: number;
  currency: string;
  /** What the buyer's client got from the provider's card form (a token, never card data). */
  paymentToken: string;
  /** The provider charges at most once per key: a retry gets the first charge's result. */
  idempotencyKey: string;
}

export type ChargeResult = { outcome: "succeeded"; providerRef: string } | { outcome: "declined"; reason: string };

/**
 * A payment provider the pay route charges through. Providers that confirm later call
 * POST /webhooks/payments instead (or as well). `signal` aborts when the route gives up.
 */
export interface PaymentProvider {
  charge(request: ChargeRequest, signal: AbortSignal): Promise<ChargeResult>;
}

/** The dev provider's test tokens (documented in docs/api.md). */
export const DEV_TEST_TOKENS = {
  succeeds: "tok_visa",
  declined: "tok_chargeDeclined",
  hangs: "tok_timeout",
} as const;

const DEV_CHARGE_TTL_SECONDS = 86_400;

/**
 * A provider for local use and tests: tok_visa succeeds, tok_chargeDeclined is declined,
 * tok_timeout never answers, any other token is declined. Like a real provider it charges
 * at most once per idempotency key, keeping its charges in Redis for a day.
 */
export function devPaymentProvider(redis: Redis): PaymentProvider {
  return {
    async charge(request, signal) {
      if (request.paymentToken === DEV_TEST_TOKENS.hangs) {
        return new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
      }
      const result: ChargeResult =
        request.paymentToken === DEV_TEST_TOKENS.succeeds
          ? { outcome: "succeeded", providerRef: `dev_ch_${crypto.randomUUID()}` }
          : {
              outcome: "declined",
              reason:
                request.paymentToken === DEV_TEST_TOKENS.declined
                  ? "the card was declined"
                  : `unknown test token; the dev provider knows ${Object.values(DEV_TEST_TOKENS).join(", ")}`,
            };
      const key = `devpay:{${request.idempotencyKey}}`;
      const stored = await redis.set(key, JSON.stringify(result), { nx: true, ex: DEV_CHARGE_TTL_SECONDS, get: true });
      return stored === null ? result : (JSON.parse(String(stored)) as ChargeResult);
    },
  };
}
