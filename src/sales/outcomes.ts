import { hashEntries, type Redis } from "../redis/client";
import type { OutcomeSeries } from "../shared/api-types";
import { saleStatsKey } from "../shared/keys";

/** How far back the admin console's chart looks. */
export const OUTCOME_WINDOW_SECONDS = 300;

/**
 * The sale's checkout outcomes per second over the window ending at `nowMs`, read from the
 * per-minute counter hashes (six HGETALLs issued together: one auto-pipelined round trip).
 * Codes are passed through as written, so a refusal added later shows up without a change here.
 */
export async function readOutcomeSeries(redis: Redis, saleId: string, nowMs: number): Promise<OutcomeSeries> {
  const to = Math.floor(nowMs / 1000);
  const from = to - OUTCOME_WINDOW_SECONDS + 1;
  const minutes: number[] = [];
  for (let minute = Math.floor(from / 60); minute <= Math.floor(to / 60); minute++) minutes.push(minute);
  const hashes = await Promise.all(minutes.map((minute) => hashEntries(redis, saleStatsKey(saleId, minute))));

  const bySecond = new Map<number, Record<string, number>>();
  for (const entries of hashes) {
    for (let i = 0; i + 1 < entries.length; i += 2) {
      // Fields are "<epoch second>:<code>"; anything else is not ours to chart.
      const match = /^(\d+):(.+)$/.exec(entries[i] as string);
      const count = Number(entries[i + 1]);
      if (!match || !Number.isSafeInteger(count)) continue;
      const at = Number(match[1]);
      if (at < from || at > to) continue;
      const counts = bySecond.get(at) ?? {};
      counts[match[2] as string] = (counts[match[2] as string] ?? 0) + count;
      bySecond.set(at, counts);
    }
  }
  const points = [...bySecond.entries()].sort(([a], [b]) => a - b).map(([at, counts]) => ({ at, counts }));
  return { from, to, points };
}
