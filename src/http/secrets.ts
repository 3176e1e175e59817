// Shared secrets (JWT_SECRET, ADMIN_TOKEN) are used only when they are long enough to resist an
// online or offline guess: a short one is refused at use, never accepted, and logged once per
// isolate so the operator sees why every request is refused.
import { log } from "../shared/log";
import { type OrderIdCipher, orderIdCipher } from "../shared/public-order-id";
import { MIN_SECRET_LENGTH, settingsOf } from "../shared/settings";
import { unavailable } from "./errors";

const reported = new Set<string>();

/** Logs one configuration error per isolate for `setting`, however many requests hit it. */
export function logConfigurationError(setting: string, problem: string): void {
  if (reported.has(setting)) return;
  reported.add(setting);
  log.error("configuration refused", { setting, problem });
}

/** The secret when it is long enough; undefined (logged) when it is unset or too short. */
export function usableSecret(setting: "JWT_SECRET" | "ADMIN_TOKEN", value: string | undefined): string | undefined {
  if (value && value.length >= MIN_SECRET_LENGTH) return value;
  logConfigurationError(setting, value ? `shorter than ${MIN_SECRET_LENGTH} characters` : "unset");
  return undefined;
}

/**
 * JWT_SECRET for what this Worker signs itself (local sign-in tokens, catalog cursors,
 * waiting-room tickets and passes): 503 naming `what` when it is not usable.
 */
export function signingSecret(env: Env, what: string): string {
  const secret = usableSecret("JWT_SECRET", settingsOf(env).JWT_SECRET);
  if (!secret) throw unavailable(`${what}: this server's JWT_SECRET is not usable`, 60);
  return secret;
}

/** The order ids people see (src/shared/public-order-id.ts): 503 while ORDER_ID_KEY is unset. */
export function orderIdsOf(env: Env): OrderIdCipher {
  const key = settingsOf(env).ORDER_ID_KEY;
  if (key) return orderIdCipher(key);
  logConfigurationError("ORDER_ID_KEY", "unset");
  throw unavailable("orders cannot be shown: this server's ORDER_ID_KEY is not set", 60);
}
