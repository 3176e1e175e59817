// A drop rehearsal: people and bots against a queued sale, as a shop would see a drop.
// People join the line before the start and keep their page open (polling when the server says
// to, at least every `maxPollMs`); some never buy when let in (no-shows), the rest take a few
// seconds to buy; each gives up after their patience runs out. Bots join too and buy the
// moment their own turn comes, and meanwhile hammer checkout without a pass, with passes copied
// from others and with passes already used. `npm run load -- --scenario drop` prints what it
// measured; the drop tests assert on it (test/node/drop-operations.test.ts).
import type { ApiClient } from "../../dev/lib/api-client.ts";
import { seededRandom } from "./seeded-random.ts";
import { percentile } from "./stats.ts";

export interface DropOptions {
  people: number;
  bots: number;
  stock: number;
  /** The share of people let in who never buy. */
  noShowShare: number;
  /** How long a person waits without being let in before leaving (ms), drawn evenly from the range. */
  patienceMs: [number, number];
  /** How long a person takes to buy once let in (ms), drawn evenly from the range. */
  thinkMs: [number, number];
  /** The sale's ceiling on places let in per second. */
  admitPerSec: number;
  passTtlSec: number;
  /** The longest between two polls of a waiting page (ms); it polls sooner when retryAfterSec says so. */
  maxPollMs?: number;
  /** Checkouts each bot tries without a pass of its own. */
  botAttempts?: number;
  /** The same seed draws the same crowd (who is a no-show, each one's patience and think time). */
  seed?: number;
  /** Which places never buy, instead of a random `noShowShare` of them: these first places of the line. */
  firstPlacesNoShow?: number;
  /** Joins sent at once. */
  joinWidth?: number;
}

/** One estimate a waiting page was shown: when (ms after the start), the wait it said (s), whether the units would likely be gone. */
interface Shown {
  atMs: number;
  waitSec: number | null;
  likelySoldOut: boolean;
}

interface Person {
  userId: string;
  token: string;
  ticket: string;
  bot: boolean;
  noShow: boolean;
  patienceMs: number;
  thinkMs: number;
  shown: Shown[];
  /** When the page first saw the pass (ms after the start). */
  admittedAtMs?: number;
  outcome: "bought" | "no-show" | "gave-up" | "sold-out" | "turned-away" | "waiting";
}

/** A pass a page was given, and whose it is. */
interface SeenPass {
  pass: string;
  owner: string;
}

export interface DropResult {
  saleId: string;
  /** When the last unit was taken (ms after the start), by the 202s; null when units were left. */
  sellOutMs: number | null;
  /** Units bought by people, and by bots (with their own pass, in their own turn). */
  peopleUnits: number;
  botUnits: number;
  /** Checkouts accepted without the buyer's own admitted pass: must stay 0. */
  botPassAbuses: number;
  /** Person (or bot) -> order id, for each 202 with the buyer's own pass. */
  accepted: Map<string, string>;
  /** People let in, and of them the no-shows (by their own choice); people who gave up waiting. */
  peopleLetIn: number;
  noShows: number;
  gaveUp: number;
  /** The no-show share the line measured (no-shows of the passes used or counted so). */
  measuredNoShowShare: number | null;
  /** Places let in per second, in `admissionBinSec` bins from the start. */
  admissionRates: number[];
  admissionBinSec: number;
  /** The wait estimates' error against when the page saw the pass (s), over every estimate shown to someone later let in. */
  estimateError: { count: number; median: number; p90: number };
  /** Of the pages told the units would likely be gone (or not) whose fate is known, how many were told right. */
  soldOutCalls: { count: number; right: number };
  /** Answers that were failures (5xx, no answer), by code. */
  failures: Map<string, number>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const bump = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
const ADMISSION_BIN_SEC = 5;

/** Runs the drop on a fifo sale created for it, everyone joining before the start. */
export async function runDrop(api: ApiClient, options: DropOptions): Promise<DropResult> {
  const { people, bots, stock, admitPerSec, passTtlSec, maxPollMs = 1_000, botAttempts = 20, joinWidth = 200 } = options;
  const rand = seededRandom(options.seed ?? 1);
  const between = ([min, max]: [number, number]) => min + rand() * (max - min);
  const sale = await api.createSale({
    name: "drop rehearsal",
    stock,
    startsAt: new Date(Date.now() + 3_600_000).toISOString(),
    endsAt: new Date(Date.now() + 7_200_000).toISOString(),
    queue: { mode: "fifo", prequeueSec: 86_400, admitPerSec, passTtlSec },
  });
  // People and bots interleaved: one bot every (people + bots) / bots joiners.
  const botEvery = bots > 0 ? (people + bots) / bots : Number.POSITIVE_INFINITY;
  const isBot = (n: number) => Math.floor((n + 1) / botEvery) > Math.floor(n / botEvery);
  const joined: (Person & { place: number })[] = [];
  const everyone = Array.from({ length: people + bots }, (_, n) => n);
  for (let i = 0; i < everyone.length; i += joinWidth) {
    const batch = await Promise.all(
      everyone.slice(i, i + joinWidth).map(async (n) => {
        const bot = isBot(n);
        const userId = `${bot ? "bot" : "person"}-${sale.id}-${n}`;
        const token = await api.userToken(userId);
        const answer = await api.joinWaitingRoom(sale.id, token);
        if (!answer.body) throw new Error(`${userId} could not join: ${answer.status} ${answer.code}`);
        return { userId, token, ticket: answer.body.ticket, bot, place: answer.body.place ?? 0 };
      }),
    );
    joined.push(
      ...batch.map((j) => ({
        ...j,
        noShow: false,
        patienceMs: between(options.patienceMs),
        thinkMs: between(options.thinkMs),
        shown: [],
        outcome: "waiting" as const,
      })),
    );
  }
  // In place order: "the first places" are the line's.
  const crowd: Person[] = joined.sort((a, b) => a.place - b.place);
  const humans = crowd.filter((p) => !p.bot);
  for (const [i, person] of humans.entries())
    person.noShow = options.firstPlacesNoShow === undefined ? rand() < options.noShowShare : i < options.firstPlacesNoShow;

  const startAt = Date.now() + 2_000;
  const edit = await api.editSale(sale.id, { startsAt: new Date(startAt).toISOString() });
  if (edit.status !== 200) throw new Error(`the sale could not be started: ${edit.status} ${edit.code}`);
  const since = () => Date.now() - startAt;

  const accepted = new Map<string, string>();
  const acceptedAtMs: number[] = [];
  const failures = new Map<string, number>();
  const seenPasses: SeenPass[] = [];
  const usedPasses: SeenPass[] = [];
  const lastPatienceMs = Math.max(options.patienceMs[0], options.patienceMs[1]);
  let soldOut = false;
  let botPassAbuses = 0;

  const buy = async (person: Person, pass: string) => {
    const answer = await api.checkoutWithPass(sale.id, person.token, pass);
    if (answer.status === 202) {
      accepted.set(person.userId, answer.orderId as string);
      acceptedAtMs.push(since());
      usedPasses.push({ pass, owner: person.userId });
      person.outcome = "bought";
      if (acceptedAtMs.length >= stock) soldOut = true;
    } else if (answer.code === "SOLD_OUT") {
      soldOut = true;
      person.outcome = "sold-out";
    } else {
      person.outcome = "turned-away";
      if (answer.status === 0 || answer.status >= 500) bump(failures, answer.code);
    }
  };

  const follow = async (person: Person) => {
    // A bot waits as long as the most patient person.
    const giveUpAt = startAt + (person.bot ? lastPatienceMs : person.patienceMs);
    while (Date.now() < giveUpAt) {
      const res = await api.pollQueue(sale.id, person.token, person.ticket);
      const p = res.body;
      if (!p) {
        if (res.status === 0 || res.status >= 500) bump(failures, res.code ?? `HTTP_${res.status}`);
        await sleep(maxPollMs);
        continue;
      }
      if (Date.now() >= startAt && (p.state === "waiting" || p.state === "paused"))
        person.shown.push({ atMs: since(), waitSec: p.estimatedWaitSec, likelySoldOut: p.likelySoldOutBeforeYou });
      if (p.state === "admitted" && p.pass) {
        person.admittedAtMs = since();
        seenPasses.push({ pass: p.pass, owner: person.userId });
        if (person.noShow) {
          person.outcome = "no-show";
          return;
        }
        if (!person.bot) await sleep(person.thinkMs);
        return buy(person, p.pass);
      }
      if (p.state === "sold_out" || p.state === "closed") {
        person.outcome = "sold-out";
        return;
      }
      if (person.bot && soldOut) return;
      await sleep(Math.min(maxPollMs, Math.max(300, p.retryAfterSec * 1000)));
    }
    person.outcome = "gave-up";
  };

  const botRefusals = async (bot: Person) => {
    for (let i = 0; i < botAttempts && !soldOut; i++) {
      // No pass, then one copied from someone else, then someone else's used one replayed, in turn.
      const pool = (i % 3 === 1 ? seenPasses : usedPasses).filter((p) => p.owner !== bot.userId);
      const pass = i % 3 === 0 ? undefined : pool[i % Math.max(1, pool.length)]?.pass;
      const answer = await api.checkoutWithPass(sale.id, bot.token, pass);
      if (answer.status === 202) botPassAbuses++;
      await sleep(maxPollMs);
    }
  };

  const admissions: { atMs: number; admitted: number }[] = [];
  let running = true;
  const watch = async () => {
    while (running) {
      const view = await api.queueStats(sale.id).catch(() => undefined);
      if (view?.admitted !== null && view?.admitted !== undefined && Date.now() >= startAt)
        admissions.push({ atMs: since(), admitted: view.admitted });
      await sleep(1_000);
    }
  };
  const watching = watch();
  await Promise.all([...crowd.map(follow), ...crowd.filter((p) => p.bot).map(botRefusals)]);
  running = false;
  await watching;
  const final = await api.queueStats(sale.id);

  return {
    saleId: sale.id,
    sellOutMs: acceptedAtMs.length >= stock ? (acceptedAtMs.sort((a, b) => a - b)[stock - 1] as number) : null,
    peopleUnits: humans.filter((p) => p.outcome === "bought").length,
    botUnits: crowd.filter((p) => p.bot && p.outcome === "bought").length,
    botPassAbuses,
    accepted,
    peopleLetIn: humans.filter((p) => p.admittedAtMs !== undefined).length,
    noShows: humans.filter((p) => p.outcome === "no-show").length,
    gaveUp: humans.filter((p) => p.outcome === "gave-up").length,
    measuredNoShowShare:
      final.noShows !== null && final.passesUsed !== null && final.noShows + final.passesUsed > 0
        ? final.noShows / (final.noShows + final.passesUsed)
        : null,
    admissionRates: admissionRates(admissions),
    admissionBinSec: ADMISSION_BIN_SEC,
    estimateError: estimateError(humans),
    soldOutCalls: soldOutCalls(humans),
    failures,
  };
}

/** Places let in per second in each bin from the start, from the console's counts read about every second. */
function admissionRates(samples: { atMs: number; admitted: number }[]): number[] {
  const binMs = ADMISSION_BIN_SEC * 1000;
  const bins = Math.ceil((samples.at(-1)?.atMs ?? 0) / binMs);
  let before = 0;
  return Array.from({ length: bins }, (_, bin) => {
    const admitted = samples.filter((s) => s.atMs < (bin + 1) * binMs).at(-1)?.admitted ?? before;
    const rate = (admitted - before) / ADMISSION_BIN_SEC;
    before = admitted;
    return rate;
  });
}

/** |shown at + the wait it said - when the page saw the pass|, for everyone later let in. */
function estimateError(people: Person[]): DropResult["estimateError"] {
  const errors = people
    .flatMap(({ admittedAtMs, shown }) =>
      admittedAtMs === undefined
        ? []
        : shown.flatMap((s) => (s.waitSec === null ? [] : [Math.abs(s.atMs + s.waitSec * 1000 - admittedAtMs) / 1000])),
    )
    .sort((a, b) => a - b);
  return { count: errors.length, median: percentile(errors, 0.5), p90: percentile(errors, 0.9) };
}

/**
 * Whether "the units will likely be gone before your turn" was right, for the pages whose fate
 * is known: a turn with a unit to buy (bought, or a no-show: it was wrong to say so), or the
 * units gone first (right to say so). Those who gave up first are not counted.
 */
function soldOutCalls(people: Person[]): DropResult["soldOutCalls"] {
  let count = 0;
  let right = 0;
  for (const p of people) {
    const gone = p.outcome === "sold-out";
    const came = p.outcome === "bought" || p.outcome === "no-show";
    if (!gone && !came) continue;
    for (const s of p.shown) {
      count++;
      if (s.likelySoldOut === gone) right++;
    }
  }
  return { count, right };
}

const share = (n: number | null) => (n === null ? "-" : `${Math.round(n * 100)}%`);

/** What the rehearsal prints (and `--json` writes): one row of figures and the admission series. */
export function dropSummary(options: DropOptions, graceSec: number, result: DropResult) {
  const units = result.peopleUnits + result.botUnits;
  return {
    figures: {
      people: options.people,
      bots: options.bots,
      stock: options.stock,
      "admit/s": options.admitPerSec,
      "grace s": graceSec,
      "sell-out s": result.sellOutMs === null ? "-" : (result.sellOutMs / 1000).toFixed(1),
      "to people": units === 0 ? "-" : share(result.peopleUnits / units),
      "no-shows": `${result.noShows} of ${result.peopleLetIn} let in`,
      "no-show share measured": share(result.measuredNoShowShare),
      "gave up": result.gaveUp,
      "wait error p50 s": result.estimateError.median.toFixed(1),
      "wait error p90 s": result.estimateError.p90.toFixed(1),
      "sold-out calls right":
        result.soldOutCalls.count === 0 ? "-" : share(result.soldOutCalls.right / result.soldOutCalls.count),
    },
    sellOutMs: result.sellOutMs,
    peopleUnits: result.peopleUnits,
    botUnits: result.botUnits,
    botPassAbuses: result.botPassAbuses,
    noShows: result.noShows,
    peopleLetIn: result.peopleLetIn,
    measuredNoShowShare: result.measuredNoShowShare,
    estimateError: result.estimateError,
    soldOutCalls: result.soldOutCalls,
    admissionRates: result.admissionRates,
    admissionBinSec: result.admissionBinSec,
  };
}
