// npm run verify-queue -- <saleId> [--lane <lane>] [--url http://127.0.0.1:8787]: recomputes a
// random sale's draw (of a presale lane's own line with --lane) from its revealed seed and
// compares it with the places the sale gave (docs/api.md: "Verifying a draw"). The list of
// places is an admin read: ADMIN_TOKEN, or the local stack's own.
import { parseArgs } from "node:util";
import { ApiClient } from "./lib/api-client.ts";
import { ROOT } from "./lib/project.ts";
import { verifyQueue } from "./lib/verify-queue.ts";
import { localSecrets, stateDir } from "./stack/local-secrets.ts";

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    url: { type: "string", default: process.env.FLASH_SALE_URL ?? "http://127.0.0.1:8787" },
    lane: { type: "string" },
  },
});
const saleId = positionals[0];
if (!saleId) {
  console.error("usage: npm run verify-queue -- <saleId> [--lane <lane>] [--url https://your-worker.example]");
  process.exit(2);
}
const secrets = localSecrets(stateDir(ROOT));
const api = new ApiClient({
  fetch: (path, init) => fetch(new URL(path, values.url), init),
  adminToken: secrets.ADMIN_TOKEN,
  jwtSecret: secrets.JWT_SECRET,
});
const verdict = await verifyQueue(api, saleId, values.lane);
for (const line of verdict.lines) console.log(line);
process.exit(verdict.ok ? 0 : 1);
