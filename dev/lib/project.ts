// Where the project is, and how its tools run wrangler offline.
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const WRANGLER = path.join(ROOT, "node_modules", ".bin", "wrangler");

/** wrangler's environment: no metrics, no network lookups, no Cloudflare account. */
export function offlineWranglerEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    WRANGLER_SEND_METRICS: "false",
    CLOUDFLARE_CF_FETCH_ENABLED: "false",
    ...extra,
  };
  delete env.CLOUDFLARE_API_TOKEN;
  return env;
}
