// npm start's demo presale (docs/lanes.md): a drop whose members' lane opens at once, with an
// allotment of its own, and whose public start comes about ten minutes later. Each start-up
// makes a batch of members' codes (a code is shown only once, when it is made) and hands one
// to the banner, so a person can buy with it on the storefront. A restart while the lane has
// time left finds the same sale, with its orders; a later one makes a new presale, so whoever
// starts the stack has a lane open to try.
import type { SaleView } from "../../src/shared/api-types.ts";
import type { ApiClient } from "../lib/api-client.ts";

const NAME = "Demo presale: the Court 96 Low, members first";
const LANE = "members";
/** The presale's sizes (EU) and pairs of each; the members' lane may sell MEMBERS_PAIRS of them. */
const SIZES: [number, number][] = [
  [40, 3],
  [41, 4],
  [42, 5],
  [43, 4],
  [44, 3],
];
const MEMBERS_PAIRS = 8;
const LANE_MS = 10 * 60_000;
/** A lane closing sooner than this is left to run: the restart makes a new presale. */
const LEFT_TO_TRY_MS = 2 * 60_000;
/** Codes made at each start-up, one purchase each: one is printed, the rest wait in the console's batch. */
const CODES = 20;

export interface DemoPresale {
  sale: SaleView;
  /** The members' lane's name, and one of the codes made now. */
  lane: string;
  code: string;
}

/** The demo presale whose members' lane is open (found, or made now), and a fresh code of it. */
export async function demoPresale(api: ApiClient, now = Date.now()): Promise<DemoPresale> {
  const sale =
    (await api.findInCatalog((s) => s.name === NAME && Date.parse(s.startsAt) - now > LEFT_TO_TRY_MS)) ??
    (await newPresale(api, now));
  const batch = await api.codeBatch(sale.id, LANE, { count: CODES });
  const code = batch.body?.codes[0];
  if (batch.status !== 201 || code === undefined) {
    throw new Error(`the demo presale's codes were not made (${batch.status} ${batch.code ?? ""} ${batch.message ?? ""})`);
  }
  return { sale, lane: LANE, code };
}

function newPresale(api: ApiClient, now: number): Promise<SaleView> {
  // Everyone may buy from a whole minute, ten or eleven minutes from now: a time that reads well.
  const publicAt = Math.ceil((now + LANE_MS) / 60_000) * 60_000;
  const iso = (ms: number) => new Date(ms).toISOString();
  return api.createSale(
    {
      name: NAME,
      description:
        "Members buy first, with the code from their invitation, until the public start; then anyone may buy what is left. One pair per buyer.",
      variants: SIZES.map(([size, stock]) => ({ id: `eu-${size}`, label: `EU ${size}`, stock })),
      price: 11_900,
      currency: "EUR",
      paymentWindowSec: 600,
      startsAt: iso(publicAt),
      endsAt: iso(publicAt + 2 * 3_600_000),
      lanes: [{ name: LANE, startsAt: iso(now - 1_000), stock: MEMBERS_PAIRS }],
      admission: undefined, // the product's default admission, not the client's test default
    },
    { idempotencyKey: `demo-presale-${publicAt}` },
  );
}
