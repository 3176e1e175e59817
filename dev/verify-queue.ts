// npm run verify-queue -- <saleId> [--lane <lane>] [--url http://127.0.0.1:8787] [--user <userId>
// [--place <n>]]: checks a random sale's waiting room (a presale lane's own line with --lane)
// from its public routes alone (docs/api.md, "Verifying a draw"): the seed against its
// commitment, the published places against their root and in draw order, with --user that
// user's draw key and place, and with --place that it is the place the sale gave them. Needs no token; exits 0 when everything matches, 1 naming what differs, 2 when
// it cannot ask.
import { parseArgs } from "node:util";
import { verifyQueue } from "./lib/verify-queue.ts";

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    url: { type: "string", default: process.env.FLASH_SALE_URL ?? "http://127.0.0.1:8787" },
    lane: { type: "string" },
    user: { type: "string" },
    place: { type: "string" },
  },
});
const saleId = positionals[0];
const place = values.place === undefined ? undefined : Number(values.place);
if (
  !saleId ||
  !/^[1-9]\d{0,15}$/.test(saleId) ||
  (place !== undefined && (!Number.isInteger(place) || place < 1 || !values.user))
) {
  console.error(
    "usage: npm run verify-queue -- <saleId> [--lane <lane>] [--url https://your-worker.example] [--user <userId> [--place <n>]]",
  );
  process.exit(2);
}
try {
  const verdict = await verifyQueue(values.url.replace(/\/+$/, ""), saleId, { lane: values.lane, userId: values.user, place });
  const { user } = verdict;
  if (user?.place) console.log(`user ${user.userId}: draw key ${user.drawKey}, place ${user.place}`);
  const what = values.lane === undefined ? `sale ${saleId}` : `sale ${saleId}, lane ${values.lane}'s line`;
  if (verdict.ok) {
    console.log(
      `${what}: the pre-queue checks out: ${verdict.places} places in draw order from the revealed seed, root ${verdict.placesRoot}`,
    );
    process.exit(0);
  }
  console.log(`${what}: the pre-queue does NOT check out:`);
  for (const problem of verdict.problems) console.log(`  - ${problem}`);
  process.exit(1);
} catch (err) {
  console.error(`sale ${saleId}: cannot verify: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(2);
}
