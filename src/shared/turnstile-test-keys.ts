// Cloudflare's published Turnstile test secrets: any token passes (or fails, or is called spent)
// with them, so they prove nothing about a buyer. The Worker refuses them unless it serves
// loopback hosts only (the local stack); the local siteverify stand-in answers for them.

/** Cloudflare's published test secrets. */
export const TURNSTILE_TEST_SECRETS = {
  passes: "1x0000000000000000000000000000000AA",
  fails: "2x0000000000000000000000000000000AA",
  spent: "3x0000000000000000000000000000000AA",
} as const;

/** Whether `secret` is one of Cloudflare's published test secrets. */
export const isTurnstileTestSecret = (secret: string): boolean =>
  (Object.values(TURNSTILE_TEST_SECRETS) as string[]).includes(secret);
