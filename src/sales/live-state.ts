import { hashEntries, hashRecord, type Redis } from "../redis/client";
import { LUA, runScript } from "../redis/scripts";
import { saleKeys } from "../shared/keys";
import { type Remaining, remainingFromMeta, type Sale, VARIANT_FIELD_PREFIX, waitingRoomOpensAt } from "./sale";

/**
 * How buyers are let in, as the sale's meta hash holds it: the waiting room's settings (see
 * lua/waiting-room-progress.lua; qpaused "1" while an operator holds admission), or for a sale
 * sold by draw qmode "draw", qopens its entries' opening and dcloses their close
 * (lua/draw-enter.lua; lua/checkout.lua then sells to winners only); and `notice`, what the
 * operator tells the waiting room ("" for nothing).
 */
export const admissionMetaFields = (sale: Sale) => ({
  qmode: sale.draw ? "draw" : sale.queue.mode,
  qopens: sale.draw ? sale.draw.opensAt : waitingRoomOpensAt(sale),
  qrate: sale.queue.admitPerSec,
  qttl: sale.queue.passTtlSec,
  dcloses: sale.draw?.closesAt ?? 0,
  qpaused: sale.admissionPaused ? 1 : 0,
  notice: sale.notice ?? "",
});

/**
 * A sale with variants' fields of the meta hash as lua/sale-sync.lua writes them: `variants`,
 * each one's stock as "<id>=<stock>,...", and `v:<id>`, each one's remaining (its stock less
 * the units `held` of it). None for a sale without variants.
 */
export function variantMetaFields(sale: Sale, held: Record<string, number>): Record<string, string | number> {
  if (sale.variants.length === 0) return {};
  const fields: Record<string, string | number> = { variants: sale.variants.map((v) => `${v.id}=${v.stock}`).join(",") };
  for (const v of sale.variants) fields[`${VARIANT_FIELD_PREFIX}${v.id}`] = v.stock - (held[v.id] ?? 0);
  return fields;
}

/**
 * A sale's lanes as the meta hash holds them (lua/sale-sync.lua): `lanes`, "<lane>=<start ms>,..."
 * in start order, and `lallot`, its allotments "<lane>[:<variant>]=<units>,..." (each also a
 * field `la:<lane>[:<variant>]`); both "" for a sale without lanes.
 */
export function laneMetaFields(sale: Pick<Sale, "lanes">): { lanes: string; lallot: string } {
  const allotments = sale.lanes.flatMap((l) => [
    ...(l.stock === null ? [] : [`${l.name}=${l.stock}`]),
    ...Object.entries(l.variants ?? {}).map(([v, n]) => `${l.name}:${v}=${n}`),
  ]);
  return { lanes: sale.lanes.map((l) => `${l.name}=${l.startsAt}`).join(","), lallot: allotments.join(",") };
}

/** Each allotment's own field of the meta hash, `la:<lane>[:<variant>]` -> units (lua/sale-sync.lua writes them from `lallot`). */
export function laneAllotmentFields(sale: Pick<Sale, "lanes">): Record<string, number> {
  const { lallot } = laneMetaFields(sale);
  return Object.fromEntries(
    lallot === ""
      ? []
      : lallot.split(",").map((pair) => {
          const [field = "", units] = pair.split("=");
          return [`la:${field}`, Number(units)];
        }),
  );
}

/**
 * Brings the sale's meta hash in Redis to this record of it (lua/sale-sync.lua): loads a new
 * sale, applies a record newer than the one applied last, and changes nothing otherwise, so
 * a create or an edit can be retried. "missing": Redis lost the sale's live state, which
 * only a restore may rebuild.
 */
export async function syncSale(redis: Redis, sale: Sale): Promise<"applied" | "unchanged" | "missing"> {
  const { qmode, qopens, qrate, qttl, dcloses, qpaused, notice } = admissionMetaFields(sale);
  const { lanes, lallot } = laneMetaFields(sale);
  const applied = await runScript<number>(
    redis,
    LUA.saleSync,
    [saleKeys(sale.id).meta],
    [
      sale.version,
      sale.stock,
      sale.startsAt,
      sale.endsAt,
      sale.idSlot,
      sale.admission.rate,
      sale.admission.burst,
      sale.name,
      sale.perUserLimit,
      sale.state,
      qmode,
      qopens,
      qrate,
      qttl,
      sale.buckets,
      dcloses,
      lanes,
      lallot,
      qpaused,
      notice,
      ...sale.variants.flatMap((v) => [v.id, v.stock]),
    ].map(String),
  );
  return Number(applied) === 1 ? "applied" : Number(applied) === 0 ? "unchanged" : "missing";
}

/**
 * Loads a sale into Redis, and the hot-path scripts with it (the waiting room's too, for a queued sale), so the crowd's first EVALSHA hits
 * instead of thousands of simultaneous NOSCRIPT misses each re-sending the source with EVAL.
 */
export async function preloadSale(redis: Redis, sale: Sale): Promise<"applied" | "unchanged" | "missing"> {
  const queued = sale.draw ? [LUA.drawEnter] : sale.queue.mode !== "off" ? [LUA.waitingRoomJoin, LUA.waitingRoomProgress] : [];
  const [synced] = await Promise.all([syncSale(redis, sale), ...[LUA.checkout, ...queued].map((s) => redis.scriptLoad(s))]);
  return synced;
}

export interface LiveSale {
  name: string;
  stock: number;
  remaining: number;
  /** The total and, for a sale with variants, each variant's. */
  remainingByVariant: Remaining;
  startsAt: number;
  endsAt: number;
  /** Order ids minted so far (accepted checkouts, including ones later released). */
  minted: number;
  /** The version of D1's record Redis applied last (lua/sale-sync.lua). */
  version: number;
}

/** The sale as Redis holds it now, or undefined when Redis does not know the sale. */
export async function readLiveSale(redis: Redis, saleId: string): Promise<LiveSale | undefined> {
  const fields = hashRecord(await hashEntries(redis, saleKeys(saleId).meta));
  const remaining = remainingFromMeta(fields);
  if (!remaining) return undefined;
  return {
    name: fields.name ?? "",
    stock: Number(fields.stock),
    remaining: remaining.total,
    remainingByVariant: remaining,
    startsAt: Number(fields.starts),
    endsAt: Number(fields.ends),
    minted: Number(fields.seq),
    // Sales loaded before versions existed were at their first.
    version: Number(fields.version ?? 1),
  };
}

/** The version of D1's record Redis applied last (lua/sale-sync.lua): one HGET; undefined when Redis does not hold the sale. */
export async function appliedVersion(redis: Redis, saleId: string): Promise<number | undefined> {
  const version = await redis.hget<string>(saleKeys(saleId).meta, "version");
  return version === null ? undefined : Number(version);
}
