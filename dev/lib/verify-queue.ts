// Recomputes a random sale's draw from what the API publishes and compares it with the
// places the sale gave: the seed (revealed on the public sale once it ends) must hash to the
// commitment published before joining opened, and ordering the pre-queue's buyers by
// HMAC-SHA256(seed, user id) must give exactly the places they were given. A presale lane's
// own line (`lane`) is drawn with the seed derived from the sale's for it (lineSeed).
import { drawOrder, lineSeed, seedCommitment } from "../../src/shared/waiting-room-draw.ts";
import type { ApiClient } from "./api-client.ts";

export interface QueueVerdict {
  ok: boolean;
  /** What was checked, one finding a line. */
  lines: string[];
}

export async function verifyQueue(api: ApiClient, saleId: string, lane?: string): Promise<QueueVerdict> {
  const lines: string[] = [];
  const fail = (line: string): QueueVerdict => ({ ok: false, lines: [...lines, `FAIL ${line}`] });
  const sale = await api.sale(saleId);
  const { mode, seed, seedCommitment: commitment } = sale.queue;
  if (mode === "off") return fail("the sale has no waiting room");

  const holders: string[] = [];
  let drawn = 0;
  let admittedThrough = 0;
  for (let from: number | null = 1; from !== null; ) {
    const page = await api.queuePlaces(saleId, from, lane);
    for (const p of page.places) {
      if (p.place !== holders.length + 1) throw new Error(`the places page from ${from} skips place ${holders.length + 1}`);
      holders.push(p.userId);
    }
    ({ drawn, admittedThrough } = page);
    from = page.next;
  }
  lines.push(`${holders.length} places, ${drawn} of them drawn from the pre-queue; places 1..${admittedThrough} admitted`);
  if (new Set(holders).size !== holders.length) return fail("a buyer holds two places");
  if (mode === "fifo") return { ok: true, lines: [...lines, "fifo: places are arrival order, nothing to recompute"] };

  if (!seed) return fail("the seed is not revealed yet: it is, once the sale has ended");
  if ((await seedCommitment(seed)) !== commitment) return fail(`SHA-256 of the seed is not the commitment ${commitment}`);
  lines.push(`the seed hashes to the commitment ${commitment}`);
  const pre = holders.slice(0, drawn);
  const recomputed = await drawOrder(lane === undefined ? seed : await lineSeed(seed, lane), pre);
  if (lane !== undefined) lines.push(`lane ${lane}'s line is drawn with HMAC-SHA256(seed, "lane:${lane}") as its seed`);
  const wrong = recomputed.findIndex((userId, i) => userId !== pre[i]);
  if (wrong >= 0) return fail(`place ${wrong + 1}: the draw gives ${recomputed[wrong]}, the sale gave ${pre[wrong]}`);
  lines.push(`the draw recomputed from the seed gives each of the ${drawn} pre-queue places the sale gave`);
  return { ok: true, lines };
}
