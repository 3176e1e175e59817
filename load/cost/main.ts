// npm run cost -- --buyers N --stock S --mode open|fifo|random|draw [--poll-sec P --minutes M] [--json] [--fresh]
//
// One drop's bill at the published prices, by service, from what each action costs as counted
// on the local stack (load/cost/actions.ts; counted once per version of the code and kept,
// `--fresh` counts again), beside the same drop as the design card draws it and a hosted
// waiting room's price, with whether it fits one Upstash database: the busiest second's
// commands and the largest record. How the drop unfolds: load/cost/drop.ts.
import { parseArgs } from "node:util";
import { countedActions } from "./counted.ts";
import { type Drop, describeDrop, MODES, type Mode, type PricedDrop, priceDesignCard, priceDrop, waitingByPush } from "./drop.ts";
import { HOSTED_WAITING_ROOM, PRICES, PRICES_READ_ON, UPSTASH_LIMITS } from "./prices.ts";
import { actionTable, dropReport, pushLine } from "./report.ts";

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

const { values } = (() => {
  try {
    return parseArgs({
      options: {
        buyers: { type: "string" },
        stock: { type: "string" },
        mode: { type: "string" },
        "poll-sec": { type: "string" },
        minutes: { type: "string", default: "10" },
        json: { type: "boolean", default: false },
        fresh: { type: "boolean", default: false },
      },
    });
  } catch (err) {
    return fail((err as Error).message);
  }
})();

const positive = (name: string, value: string | undefined): number => {
  const n = Number(value);
  if (value === undefined || !Number.isFinite(n) || n <= 0) fail(`--${name} must be a positive number`);
  return n;
};
if (!MODES.includes(values.mode as Mode)) fail(`--mode must be one of ${MODES.join(", ")}`);
const drop: Drop = {
  buyers: Math.round(positive("buyers", values.buyers)),
  stock: Math.round(positive("stock", values.stock)),
  mode: values.mode as Mode,
  minutes: positive("minutes", values.minutes),
  ...(values["poll-sec"] !== undefined && { pollSec: positive("poll-sec", values["poll-sec"]) }),
};

const counted = await countedActions({
  fresh: values.fresh,
  progress: values.json ? undefined : (label) => process.stderr.write(`${label}...\n`),
});
const ours = await priceDrop(drop, counted.actions);
const card = await priceDesignCard(drop, counted.actions);

if (values.json) {
  const bill = (p: PricedDrop) => ({
    usage: p.usage,
    bill: p.bill,
    peak: p.peak,
    largestRecord: p.largestRecord,
    fits: p.fits,
    times: p.times,
    isolateSeconds: p.isolateSeconds,
    cadence: p.cadence,
  });
  console.log(
    JSON.stringify({
      drop,
      prices: { ...PRICES, readOn: PRICES_READ_ON, upstashLimits: UPSTASH_LIMITS },
      counts: { code: counted.code, measuredAt: counted.measuredAt, actions: counted.actions },
      bill: { thisProject: bill(ours), designCard: bill(card), hostedWaitingRoom: HOSTED_WAITING_ROOM },
      waitingByPush: counted.push && waitingByPush(ours, counted.push),
    }),
  );
  process.exit(0);
}

console.log(`\nWhat each action costs, counted on the local stack (code ${counted.code}, ${counted.measuredAt})`);
console.log(actionTable(counted));
console.log(`\nThe drop: ${describeDrop(drop)}; ${ours.cadence}`);
console.log(
  `Prices read ${PRICES_READ_ON}, beyond each plan's included usage; Workers CPU at this machine's CPU per request (an upper bound)`,
);
console.log(dropReport(drop, ours, card));
if (counted.push) console.log(pushLine(waitingByPush(ours, counted.push)));
