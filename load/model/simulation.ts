// A discrete-event simulation of one sale's global spike: every attempt from a buyer in some
// region reaches a Cloudflare location, takes CPU in one of its isolates, and is decided by
// either design. Deterministic: the same seed gives the same figures.
//
// atomic: an isolate refuses from its memo what it knows is sold out; otherwise the checkout
//   joins the isolate's lane for the sale, which keeps one script call in flight to Upstash
//   and sends everyone waiting (up to 100) when it lands, unless it answered sold out: then
//   the memo refuses everyone waiting. Upstash runs one call at a time on
//   the sale's keys, at most `upstashCommandsPerSec` calls a second. One queue message per
//   call that reserved; settlement into D1 behind it.
// durable-object: every attempt is one request to the sale's one object, which serves them
//   one at a time (`objectMsPerRpc` + `objectMsPerBuyer` each), wherever the buyer is.
// durable-object-merged: the object at its best, built like atomic: the same lanes, batches
//   and memo, the object serving one RPC of n buyers in `objectMsPerRpc` + n x
//   `objectMsPerBuyer`, with no commands-per-second cap but its own time; the object is the
//   record (no queue, no D1).
import { seededRandom as random } from "../runner/seeded-random.ts";
import { percentile } from "../runner/stats.ts";
import { INPUTS, REGIONS, type Region } from "./inputs.ts";

export type Design = "atomic" | "durable-object" | "durable-object-merged";
type Inputs = { [K in keyof typeof INPUTS]: (typeof INPUTS)[K] extends readonly unknown[] ? [number, number] : number };

/** Events in time order (ties in the order they were scheduled). */
class Events {
  private heap: { at: number; seq: number; run: () => void }[] = [];
  private seq = 0;
  now = 0;

  at(at: number, run: () => void): void {
    const heap = this.heap;
    heap.push({ at, seq: this.seq++, run });
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(i, parent)) break;
      [heap[i], heap[parent]] = [heap[parent] as (typeof heap)[number], heap[i] as (typeof heap)[number]];
      i = parent;
    }
  }

  private before(i: number, j: number): boolean {
    const a = this.heap[i] as (typeof this.heap)[number];
    const b = this.heap[j] as (typeof this.heap)[number];
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  run(): void {
    const heap = this.heap;
    while (heap.length > 0) {
      const top = heap[0] as (typeof heap)[number];
      const last = heap.pop() as (typeof heap)[number];
      if (heap.length > 0) {
        heap[0] = last;
        let i = 0;
        for (;;) {
          const l = 2 * i + 1;
          const r = l + 1;
          let m = i;
          if (l < heap.length && this.before(l, m)) m = l;
          if (r < heap.length && this.before(r, m)) m = r;
          if (m === i) break;
          [heap[i], heap[m]] = [heap[m] as (typeof heap)[number], heap[i] as (typeof heap)[number]];
          i = m;
        }
      }
      this.now = top.at;
      top.run();
    }
  }
}

interface Isolate {
  cpuFreeAt: number;
  soldOutUntil: number;
  inFlight: boolean;
  waiting: Attempt[];
  /**
   * When its refusal counters go out: a second after the first refusal not yet written
   * (src/checkout/local-outcomes.ts), each write one HINCRBY and one EXPIRE.
   */
  counterWrites: number[];
}

interface Attempt {
  arriveMs: number;
  clientRttMs: number;
  region: Region;
  isolate: Isolate;
}

export interface Outcome {
  design: Design;
  attempts: number;
  accepted: number;
  /** Answer time as the buyer sees it (ms). */
  p50Ms: number;
  p99Ms: number;
  /** When the last unit was taken, from the spike's start (ms); null when units were left. */
  sellOutMs: number | null;
  /** When the last attempt was answered (ms). */
  lastAnswerMs: number;
  /** The busiest second of the store (Upstash calls, or RPCs to the object). */
  peakStoreRequestsPerSec: number;
  /** Calls the store served, and the buyers it decided in them (the rest were refused in their isolate). */
  storeCalls: number;
  storeDecided: number;
  storeLimitPerSec: number;
  /** atomic: Upstash commands by kind, and the busiest second of all of them together. */
  commandsByKind: { scriptCalls: number; settlementClears: number; counters: number };
  peakCommandsPerSec: number;
  /** atomic: the queue's busiest second, and how long D1 takes to hold every order. */
  peakQueueMessagesPerSec: number;
  d1SettleMs: number;
  usage: Usage;
}

/** What the spike consumed, for the bill. */
export interface Usage {
  workerRequests: number;
  workerCpuMs: number;
  upstashCommands: number;
  queueMessages: number;
  d1RowsWritten: number;
  objectRequests: number;
  objectGbSeconds: number;
  objectRowsWritten: number;
}

/** Peak of events per second, counted in 100 ms windows. */
function peakPerSecond(times: number[]): number {
  const windows = new Map<number, number>();
  for (const t of times) windows.set(Math.floor(t / 100), (windows.get(Math.floor(t / 100)) ?? 0) + 1);
  return Math.max(0, ...windows.values()) * 10;
}

/** The spike: `attempts` arrivals spread uniformly over one second, each placed in a region, a location and an isolate. */
function spike(attempts: number, rand: () => number, inputs: Inputs): Attempt[] {
  const cpu = Math.max(inputs.cpuMsPerCheckout, inputs.cpuMsPerLocalRefusal);
  const isolatesOf = REGIONS.map((region) => {
    const perLocationPerSec = (attempts * region.share) / region.locations;
    const needed = Math.ceil((perLocationPerSec * cpu) / 1000 / inputs.isolateUtilisation);
    const count = Math.max(inputs.minIsolatesPerLocation, needed);
    return Array.from(
      { length: region.locations * count },
      (): Isolate => ({
        cpuFreeAt: 0,
        soldOutUntil: -1,
        inFlight: false,
        waiting: [],
        counterWrites: [],
      }),
    );
  });
  const list: Attempt[] = [];
  for (let i = 0; i < attempts; i++) {
    let pick = rand();
    let r = 0;
    while (r < REGIONS.length - 1 && pick >= (REGIONS[r] as Region).share) pick -= (REGIONS[r++] as Region).share;
    const isolates = isolatesOf[r] as Isolate[];
    const [lo, hi] = inputs.clientRttMs;
    list.push({
      arriveMs: rand() * 1000,
      clientRttMs: lo + rand() * (hi - lo),
      region: REGIONS[r] as Region,
      isolate: isolates[Math.floor(rand() * isolates.length)] as Isolate,
    });
  }
  return list;
}

/** A refusal the isolate answered itself, at `at`: its counters go out a second after the first not yet written. */
function countLocalRefusal(isolate: Isolate, at: number): void {
  const pending = isolate.counterWrites.at(-1);
  if (pending === undefined || pending <= at) isolate.counterWrites.push(at + 1000);
}

/** CPU in the isolate, one request at a time: when it is done. */
function useCpu(isolate: Isolate, at: number, ms: number): number {
  const start = Math.max(at, isolate.cpuFreeAt);
  isolate.cpuFreeAt = start + ms;
  return isolate.cpuFreeAt;
}

export function simulate(design: Design, attempts: number, seed: number, inputs: Inputs = INPUTS as Inputs): Outcome {
  const rand = random(seed);
  const events = new Events();
  const list = spike(attempts, rand, inputs);
  const latencies = new Float64Array(attempts);
  let answered = 0;
  let lastAnswerMs = 0;
  let remaining = inputs.stock;
  let sellOutMs: number | null = null;
  const storeStarts: number[] = [];
  let storeDecided = 0;
  const messageTimes: number[] = [];
  const messageOrders: number[] = [];
  const commandTimes: number[] = [];
  const commandsByKind = { scriptCalls: 0, settlementClears: 0, counters: 0 };
  const usage: Usage = {
    workerRequests: attempts,
    workerCpuMs: 0,
    upstashCommands: 0,
    queueMessages: 0,
    d1RowsWritten: 0,
    objectRequests: 0,
    objectGbSeconds: 0,
    objectRowsWritten: 0,
  };
  const answer = (a: Attempt, atLocationMs: number) => {
    const at = atLocationMs + a.clientRttMs / 2;
    latencies[answered++] = at - a.arriveMs;
    lastAnswerMs = Math.max(lastAnswerMs, at);
  };
  const take = (at: number): boolean => {
    if (remaining <= 0) return false;
    if (--remaining === 0) sellOutMs = at;
    return true;
  };

  /**
   * The merged designs: one lane per isolate and sale, one call in flight, everyone who
   * arrived meanwhile (up to maxBatch) in the next; the memo refuses for a second after a
   * sold-out answer, those waiting in the lane then too. The store runs one call at a time, `serviceMs(n)` for a batch of n,
   * starting calls at least `spacingMs` apart. Answers the store's busy span.
   */
  const lanes = (
    store: { spacingMs: number; serviceMs: (buyers: number) => number },
    onReply: (reserved: number, at: number) => void,
  ) => {
    let storeFreeAt = 0;
    let lastStart = Number.NEGATIVE_INFINITY;
    let firstStart = Number.POSITIVE_INFINITY;
    const send = (isolate: Isolate, batch: Attempt[], at: number) => {
      isolate.inFlight = true;
      const rtt = (batch[0] as Attempt).region.rttMs;
      const start = Math.max(at + rtt / 2, storeFreeAt, lastStart + store.spacingMs);
      lastStart = start;
      firstStart = Math.min(firstStart, start);
      storeStarts.push(start);
      storeFreeAt = start + store.serviceMs(batch.length);
      storeDecided += batch.length;
      const outcomes = batch.map(() => take(storeFreeAt));
      const replyAt = storeFreeAt + rtt / 2;
      events.at(replyAt, () => {
        onReply(outcomes.filter(Boolean).length, replyAt);
        if (remaining === 0) isolate.soldOutUntil = replyAt + inputs.soldOutMemoMs;
        batch.forEach((a, i) => {
          answer(a, replyAt + (i === 0 ? 0 : rand() * inputs.pickupMs));
        });
        isolate.inFlight = false;
        if (isolate.soldOutUntil > replyAt) {
          // The answer showed the sale sold out: the memo refuses everyone still waiting, no next call.
          for (const a of isolate.waiting.splice(0)) {
            countLocalRefusal(isolate, replyAt);
            answer(a, replyAt + rand() * inputs.pickupMs);
          }
        } else if (isolate.waiting.length > 0) {
          send(isolate, isolate.waiting.splice(0, inputs.maxBatch), replyAt);
        }
      });
    };
    for (const a of list) {
      events.at(a.arriveMs + a.clientRttMs / 2, () => {
        const { isolate } = a;
        const now = events.now;
        if (isolate.soldOutUntil > now) {
          usage.workerCpuMs += inputs.cpuMsPerLocalRefusal;
          const done = useCpu(isolate, now, inputs.cpuMsPerLocalRefusal);
          countLocalRefusal(isolate, done);
          events.at(done, () => answer(a, done));
          return;
        }
        usage.workerCpuMs += inputs.cpuMsPerCheckout;
        const done = useCpu(isolate, now, inputs.cpuMsPerCheckout);
        events.at(done, () => {
          if (isolate.inFlight) isolate.waiting.push(a);
          else send(isolate, [a], done);
        });
      });
    }
    events.run();
    return { busyMs: storeStarts.length > 0 ? storeFreeAt - firstStart : 0 };
  };

  if (design === "atomic") {
    lanes(
      {
        spacingMs: 1000 / inputs.upstashCommandsPerSec,
        serviceMs: (buyers) => inputs.scriptMsPerCall + inputs.scriptMsPerBuyer * buyers,
      },
      (reserved, at) => {
        if (reserved === 0) return;
        usage.queueMessages++;
        messageTimes.push(at);
        messageOrders.push(reserved);
      },
    );
    // Every Upstash command, when it is sent: the script calls; settlement's outbox clear once
    // D1 holds a message's orders (D1 writes one order at a time, in the order they came);
    // each isolate's refusal counters, written a second after the first refusal they count.
    commandTimes.push(...storeStarts);
    commandsByKind.scriptCalls = storeStarts.length;
    let d1FreeAt = 0;
    messageTimes.forEach((at, i) => {
      d1FreeAt = Math.max(at, d1FreeAt) + ((messageOrders[i] as number) * 1000) / inputs.d1OrdersPerSec;
      for (let c = 0; c < inputs.settlementCommandsPerMessage; c++) commandTimes.push(d1FreeAt);
    });
    commandsByKind.settlementClears = usage.queueMessages * inputs.settlementCommandsPerMessage;
    for (const isolate of new Set(list.map((a) => a.isolate))) {
      for (const at of isolate.counterWrites) commandTimes.push(at, at);
      commandsByKind.counters += 2 * isolate.counterWrites.length;
    }
    usage.upstashCommands = commandsByKind.scriptCalls + commandsByKind.settlementClears + commandsByKind.counters;
    usage.d1RowsWritten = (inputs.stock - remaining) * inputs.d1RowsPerOrder;
  } else if (design === "durable-object-merged") {
    const { busyMs } = lanes(
      { spacingMs: 0, serviceMs: (buyers) => inputs.objectMsPerRpc + inputs.objectMsPerBuyer * buyers },
      () => undefined,
    );
    // The object is the record: no queue, no D1, no counters elsewhere.
    usage.objectRequests = storeStarts.length;
    usage.objectRowsWritten = (inputs.stock - remaining) * inputs.objectRowsPerAccepted;
    usage.objectGbSeconds = (busyMs / 1000) * inputs.objectGb;
  } else {
    let objectFreeAt = 0;
    let firstArrival = Number.POSITIVE_INFINITY;
    for (const a of list) {
      events.at(a.arriveMs + a.clientRttMs / 2, () => {
        usage.workerCpuMs += inputs.cpuMsPerCheckout;
        const done = useCpu(a.isolate, events.now, inputs.cpuMsPerCheckout);
        const rtt = a.region.rttMs;
        const arrive = done + rtt / 2;
        firstArrival = Math.min(firstArrival, arrive);
        const start = Math.max(arrive, objectFreeAt);
        storeStarts.push(start);
        objectFreeAt = start + inputs.objectMsPerRpc + inputs.objectMsPerBuyer;
        storeDecided++;
        const ok = take(objectFreeAt);
        if (ok) usage.objectRowsWritten += inputs.objectRowsPerAccepted;
        const replyAt = objectFreeAt + rtt / 2;
        events.at(replyAt, () => answer(a, replyAt));
      });
    }
    events.run();
    usage.objectRequests = attempts;
    // Billed for wall-clock time while busy: the object never idles during the spike.
    usage.objectGbSeconds = ((objectFreeAt - firstArrival) / 1000) * inputs.objectGb;
  }

  const sorted = latencies.slice(0, answered).sort();
  const accepted = inputs.stock - remaining;
  return {
    design,
    attempts,
    accepted,
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    sellOutMs,
    lastAnswerMs,
    peakStoreRequestsPerSec: peakPerSecond(storeStarts),
    storeCalls: storeStarts.length,
    storeDecided,
    // The object's soft limit: requests of one buyer each a second.
    storeLimitPerSec:
      design === "atomic" ? inputs.upstashCommandsPerSec : 1000 / (inputs.objectMsPerRpc + inputs.objectMsPerBuyer),
    commandsByKind,
    peakCommandsPerSec: peakPerSecond(commandTimes),
    peakQueueMessagesPerSec: peakPerSecond(messageTimes),
    d1SettleMs: design === "atomic" ? (accepted * 1000) / inputs.d1OrdersPerSec : 0,
    usage,
  };
}
