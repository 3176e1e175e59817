// npm start's demo draw (docs/draws.md): a drop sold by draw whose entries open at once and
// close about ten minutes later, the sale (its winners paying) starting at the close, mixed
// with the local beacon's first round after the close. A restart while its entries are still
// open finds the same draw, with its entries; a later one makes a new draw, so whoever starts
// the stack has one to enter.
import type { SaleView } from "../../src/shared/api-types.ts";
import type { BeaconStandIn } from "../beacon/stand-in.ts";
import type { ApiClient } from "../lib/api-client.ts";

const NAME = "Demo draw: the Court 96 in sizes EU 40 to 44";
/** The draw's sizes (EU) and pairs of each. */
const SIZES: [number, number][] = [
  [40, 2],
  [41, 3],
  [42, 4],
  [43, 3],
  [44, 2],
];
const OPEN_MS = 10 * 60_000;
/** A draw closing sooner than this is left to run: the restart makes a new one. */
const LEFT_TO_ENTER_MS = 2 * 60_000;

/** The demo draw whose entries are open (found, or made now). */
export async function demoDraw(api: ApiClient, beacon: BeaconStandIn, now = Date.now()): Promise<SaleView> {
  const open = await api.findInCatalog(
    (s) => s.name === NAME && s.draw !== null && Date.parse(s.draw.closesAt) - now > LEFT_TO_ENTER_MS,
  );
  if (open) return open;
  // Entries close on a whole minute, ten or eleven minutes from now: a time that reads well.
  const closesAt = Math.ceil((now + OPEN_MS) / 60_000) * 60_000;
  const iso = (ms: number) => new Date(ms).toISOString();
  return api.createSale(
    {
      name: NAME,
      description:
        "Enter for one pair in your size before the entries close. The winners are drawn at random at the close, and each has ten minutes to pay.",
      variants: SIZES.map(([size, stock]) => ({ id: `eu-${size}`, label: `EU ${size}`, stock })),
      price: 15_900,
      currency: "EUR",
      paymentWindowSec: 600,
      startsAt: iso(closesAt),
      endsAt: iso(closesAt + 2 * 3_600_000),
      draw: {
        opensAt: iso(now - 1_000),
        closesAt: iso(closesAt),
        beacon: { url: beacon.url, round: beacon.roundAt(closesAt + 1_000) },
      },
      admission: undefined, // the product's default admission, not the client's test default
    },
    { idempotencyKey: `demo-draw-${closesAt}` },
  );
}
