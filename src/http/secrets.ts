// Shared secrets (JWT_SECRET, ADMIN_TOKEN) are used only when they are long enough to resist an
// online or offline guess: a short one is refused at use, never accepted, and logged once per
// isolate so the operator sees why every request is refused.
import { log } from "../shared/log";

/** The shortest shared secret accepted: 32 characters, as `openssl rand -base64 32` gives 44. */
export const MIN_SECRET_LENGTH = 32;

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
