// The soak's mixed traffic, as a flash sale's crowd sends it: a new sale every few seconds
// with a crowd of buyers (quantities, then payments), page pollers on the newest sale, the
// catalog polled, and the cron ticks the platform would send. Every answer is tallied.
import type { ApiClient } from "../../dev/lib/api-client.ts";
import { percentile } from "../runner/stats.ts";

/** Answers by status (0: no answer at all) and their latencies, since the last `take()`. */
export class Tally {
  private statuses = new Map<number, number>();
  private latencies: number[] = [];

  note(status: number, ms: number): void {
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
    this.latencies.push(ms);
  }

  /** Sends `request`, reads its body, and notes its answer; never throws. */
  async timed(request: () => Promise<Response>): Promise<Response | undefined> {
    const started = performance.now();
    try {
      const res = await request();
      await res.arrayBuffer();
      this.note(res.status, performance.now() - started);
      return res;
    } catch {
      this.note(0, performance.now() - started);
      return undefined;
    }
  }

  /** What came since the last take, and starts afresh. */
  take(): { requests: number; statuses: Map<number, number>; p50: number; p99: number } {
    const sorted = this.latencies.sort((a, b) => a - b);
    const taken = {
      requests: sorted.length,
      statuses: this.statuses,
      p50: percentile(sorted, 0.5),
      p99: percentile(sorted, 0.99),
    };
    this.statuses = new Map();
    this.latencies = [];
    return taken;
  }
}

export interface TrafficShape {
  /** A new sale this often. */
  saleEveryMs: number;
  stock: number;
  /** Distinct buyers per sale, `buyersAtOnce` in flight. */
  buyers: number;
  buyersAtOnce: number;
  /** Clients polling the newest sale's page, and the catalog, about once a second each. */
  pagePollers: number;
  catalogPollers: number;
  /** The cron trigger, as the platform would fire it. */
  cronEveryMs: number;
}

export const SOAK_TRAFFIC: TrafficShape = {
  saleEveryMs: 10_000,
  stock: 300,
  buyers: 600,
  buyersAtOnce: 40,
  pagePollers: 10,
  catalogPollers: 2,
  cronEveryMs: 10_000,
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Drives the traffic until `until` (epoch ms); resolves when every client has stopped. */
export async function driveTraffic(
  api: ApiClient,
  cronTick: () => Promise<Response>,
  tally: Tally,
  shape: TrafficShape,
  until: number,
): Promise<void> {
  let newest: string | undefined;
  let salesMade = 0;
  const running = () => Date.now() < until;

  async function buyer(saleId: string, user: string): Promise<void> {
    const token = await api.userToken(user);
    const quantity = 1 + (user.length % 2);
    const started = performance.now();
    const answer = await api.checkout(saleId, token, quantity);
    tally.note(answer.status, performance.now() - started);
    if (answer.status !== 202 || !answer.orderId) return;
    // Most pay at once; some are declined: the unit comes back.
    const card = Math.random() < 0.9 ? "tok_visa" : "tok_chargeDeclined";
    await tally.timed(async () => {
      const paid = await api.pay(answer.orderId as string, token, card, `soak-${answer.orderId}`);
      return new Response(null, { status: paid.status });
    });
  }

  async function crowd(saleId: string): Promise<void> {
    const users = Array.from({ length: shape.buyers }, (_, i) => `soak-${saleId}-${i}`);
    const lanes = Array.from({ length: shape.buyersAtOnce }, async () => {
      for (let user = users.shift(); user !== undefined && running(); user = users.shift()) await buyer(saleId, user);
    });
    await Promise.all(lanes);
  }

  async function sales(): Promise<void> {
    const crowds: Promise<void>[] = [];
    while (running()) {
      const started = performance.now();
      try {
        const sale = await api.createSale({
          stock: shape.stock,
          name: `soak ${++salesMade}`,
          perUserLimit: 2,
          paymentWindowSec: 60,
        });
        tally.note(201, performance.now() - started);
        newest = sale.id;
        crowds.push(crowd(sale.id));
      } catch {
        tally.note(0, performance.now() - started);
      }
      await sleep(shape.saleEveryMs);
    }
    await Promise.all(crowds);
  }

  async function poller(path: () => string | undefined): Promise<void> {
    while (running()) {
      const target = path();
      if (target) await tally.timed(() => api.fetch(target));
      await sleep(1_000);
    }
  }

  async function cron(): Promise<void> {
    while (running()) {
      await tally.timed(cronTick);
      await sleep(shape.cronEveryMs);
    }
  }

  await Promise.all([
    sales(),
    cron(),
    ...Array.from({ length: shape.pagePollers }, () => poller(() => newest && `/api/sales/${newest}`)),
    ...Array.from({ length: shape.catalogPollers }, () => poller(() => "/api/sales")),
  ]);
}

/** `readers` clients reading `path` back to back for `forMs`; every answer tallied. */
export async function readersOf(api: ApiClient, tally: Tally, path: string, readers: number, forMs: number): Promise<void> {
  const until = Date.now() + forMs;
  await Promise.all(
    Array.from({ length: readers }, async () => {
      while (Date.now() < until) await tally.timed(() => api.fetch(path));
    }),
  );
}
