// npm run verify-draw -- <saleId> [--url http://127.0.0.1:8787]: checks a sale's draw from its
// public routes alone (docs/draws.md): the committed list against its root, the seed against
// its commitment, the beacon's round against the beacon, and the winners and the waitlist
// against a shuffle and selection done again here. Needs no token; exits 0 when everything
// matches, 1 naming what differs, 2 when it cannot ask.
import { parseArgs } from "node:util";
import { verifyDraw } from "./lib/verify-draw.ts";

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { url: { type: "string", default: process.env.FLASH_SALE_URL ?? "http://127.0.0.1:8787" } },
});
const saleId = positionals[0];
if (!saleId || !/^[1-9]\d{0,15}$/.test(saleId)) {
  console.error("usage: npm run verify-draw -- <saleId> [--url https://your-worker.example]");
  process.exit(2);
}
try {
  const verdict = await verifyDraw(values.url.replace(/\/+$/, ""), saleId);
  if (verdict.ok) {
    console.log(
      `sale ${saleId}: the draw checks out: ${verdict.entries} committed entries, ${verdict.winners} selected, as published`,
    );
    process.exit(0);
  }
  console.log(`sale ${saleId}: the draw does NOT check out:`);
  for (const problem of verdict.problems) console.log(`  - ${problem}`);
  process.exit(1);
} catch (err) {
  console.error(`sale ${saleId}: cannot verify: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(2);
}
