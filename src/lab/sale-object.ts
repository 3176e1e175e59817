import { DurableObject } from "cloudflare:workers";

/**
 * The Cloudflare-native peer of the atomic checkout: one SQLite-backed Durable Object per
 * lab sale holds its stock and buyers, and every checkout is one RPC to it that checks and
 * writes in one synchronous transaction (merged: one RPC and one transaction for a batch of
 * an isolate's checkouts; each of the two strategies sells from an object of its own). The
 * object runs one event at a time on one thread in one location, so it needs no lock;
 * every buyer in the world pays the trip to it.
 *
 * Methods answer their outcomes as values, never by throwing: an exception thrown across
 * RPC is logged by the runtime as uncaught even when the caller handles it.
 */
export type ObjectCheckout =
  | { code: "OK"; orderId: string; remaining: number }
  | { code: "SOLD_OUT" | "ALREADY_PURCHASED" | "SALE_NOT_FOUND" };

export interface ObjectReport {
  stock: number;
  remaining: number;
  /** Checkouts accepted, each counted once (the order number of the last one). */
  accepted: number;
  buyers: number;
  /** Checkout RPCs served since this instance started (kept in memory: counting costs the object no write). */
  rpcs: number;
}

export class LabSaleObject extends DurableObject<Env> {
  private rpcs = 0;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(
      `CREATE TABLE IF NOT EXISTS sale (one INTEGER PRIMARY KEY CHECK (one = 1), stock INTEGER NOT NULL,
         remaining INTEGER NOT NULL, seq INTEGER NOT NULL, hop_ms INTEGER NOT NULL);
       CREATE TABLE IF NOT EXISTS buyers (user_id TEXT PRIMARY KEY, order_id TEXT NOT NULL);`,
    );
  }

  /**
   * Lays out the sale once. `hopMs` is an emulated round trip each checkout waits before it
   * is served: the distance from a buyer's isolate to the object's one location, which
   * a single machine does not have (0 in production).
   */
  seed(stock: number, hopMs: number): void {
    this.ctx.storage.sql.exec("INSERT OR IGNORE INTO sale VALUES (1, ?, ?, 0, ?)", stock, stock, hopMs);
  }

  /** One buyer's checkout, one RPC (the durable-object strategy). */
  async checkout(userId: string): Promise<ObjectCheckout> {
    await this.hop();
    return this.ctx.storage.transactionSync(() => this.decide(userId));
  }

  /**
   * A whole merged batch in one RPC (the durable-object-merged strategy): one hop, then
   * every buyer checked and written in order in one synchronous transaction. One answer
   * per buyer, in the buyers' order; a buyer twice in the batch is refused the second time.
   */
  async checkoutBatch(userIds: string[]): Promise<ObjectCheckout[]> {
    await this.hop();
    return this.ctx.storage.transactionSync(() => userIds.map((userId) => this.decide(userId)));
  }

  /** Counts the RPC, then waits the emulated round trip to the object's one location (see seed). */
  private async hop(): Promise<void> {
    this.rpcs++;
    const hop = this.ctx.storage.sql.exec<{ hop_ms: number }>("SELECT hop_ms FROM sale").toArray()[0]?.hop_ms ?? 0;
    if (hop > 0) await scheduler.wait(hop);
  }

  /** Checks and writes one buyer; runs inside the caller's transaction. */
  private decide(userId: string): ObjectCheckout {
    const sale = this.ctx.storage.sql.exec<{ remaining: number; seq: number }>("SELECT remaining, seq FROM sale").toArray()[0];
    if (!sale) return { code: "SALE_NOT_FOUND" };
    if (this.ctx.storage.sql.exec("SELECT 1 FROM buyers WHERE user_id = ?", userId).toArray().length > 0) {
      return { code: "ALREADY_PURCHASED" };
    }
    if (sale.remaining <= 0) return { code: "SOLD_OUT" };
    const orderId = String(sale.seq + 1);
    this.ctx.storage.sql.exec("UPDATE sale SET remaining = remaining - 1, seq = seq + 1");
    this.ctx.storage.sql.exec("INSERT INTO buyers VALUES (?, ?)", userId, orderId);
    return { code: "OK", orderId, remaining: sale.remaining - 1 };
  }

  report(): ObjectReport | undefined {
    const sale = this.ctx.storage.sql
      .exec<{ stock: number; remaining: number; seq: number }>("SELECT stock, remaining, seq FROM sale")
      .toArray()[0];
    if (!sale) return undefined;
    const buyers = this.ctx.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM buyers").one().n;
    return { stock: sale.stock, remaining: sale.remaining, accepted: sale.seq, buyers, rpcs: this.rpcs };
  }
}
