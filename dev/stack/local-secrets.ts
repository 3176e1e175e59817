// The local stack's secrets: random per state directory, made on first use and kept across
// restarts (so tokens minted yesterday still verify, and endpoint secrets sealed yesterday
// still open), never fixed strings anyone could know. A secret the stored file lacks (made by
// an older npm start) is made and written to it. ADMIN_TOKEN and JWT_SECRET in the environment
// win over the stored ones.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { SECRETS_KEY_BYTES } from "../../src/shared/settings.ts";

export interface LocalSecrets {
  ADMIN_TOKEN: string;
  JWT_SECRET: string;
  /** The gateway's bearer token (UPSTASH_REDIS_REST_TOKEN for the Worker). */
  GATEWAY_TOKEN: string;
  /** redis-server's requirepass. */
  REDIS_PASSWORD: string;
  /** Signs POST /webhooks/payments (PAYMENT_WEBHOOK_SECRET for the Worker). */
  PAYMENT_WEBHOOK_SECRET: string;
  /** Seals the order events' endpoint secrets in D1: 32 bytes in base64, as the setting wants. */
  ORDER_EVENT_SECRETS_KEY: string;
  /** The key of public order ids (ORDER_ID_KEY): kept, since the ids handed out depend on it. */
  ORDER_ID_KEY: string;
}

const random = () => randomBytes(24).toString("base64url");

/** Fresh random secrets, for a throw-away stack. */
export function randomSecrets(): LocalSecrets {
  return {
    ADMIN_TOKEN: random(),
    JWT_SECRET: random(),
    GATEWAY_TOKEN: random(),
    REDIS_PASSWORD: random(),
    PAYMENT_WEBHOOK_SECRET: random(),
    ORDER_EVENT_SECRETS_KEY: randomBytes(SECRETS_KEY_BYTES).toString("base64"),
    ORDER_ID_KEY: randomBytes(32).toString("hex"),
  };
}

/**
 * The secrets kept in `stateDir`/secrets.json, created there the first time; one a file made
 * before it existed lacks is made and kept too, so it stays the same across restarts.
 */
export function localSecrets(stateDir: string): LocalSecrets {
  const file = path.join(stateDir, "secrets.json");
  const kept = existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as Partial<LocalSecrets>) : undefined;
  const stored: LocalSecrets = { ...randomSecrets(), ...kept };
  if (!kept || Object.keys(stored).some((name) => !(name in kept))) {
    mkdirSync(stateDir, { recursive: true });
    writeFileSync(file, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600 });
  }
  return {
    ...stored,
    ADMIN_TOKEN: process.env.ADMIN_TOKEN || stored.ADMIN_TOKEN,
    JWT_SECRET: process.env.JWT_SECRET || stored.JWT_SECRET,
  };
}

/** Where `npm start` keeps its state: STACK_STATE_DIR, or .state/ in the project. */
export const stateDir = (root: string) => process.env.STACK_STATE_DIR || path.join(root, ".state");
