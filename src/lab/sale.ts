import { hashFields, type Redis } from "../redis/client";
import { LUA } from "../redis/scripts";
import { preloadSale, readLiveSale } from "../sales/live-state";
import type { LabCopyReport, LabSaleReport } from "../shared/lab-types";
import { DEFAULT_CURRENCY, DEFAULT_QUEUE, MAX_ADMISSION } from "../shared/limits";
import { atomicKeys, atomicSaleId, type HandRolledStrategy, LAB_SALE_BUCKETS, labKeys, mergedObjectName } from "./keys";
import type { LabBackends } from "./strategy";

const HAND_ROLLED: HandRolledStrategy[] = ["naive", "lock", "redlock", "optimistic", "design-card"];
/** Lab sales open at once and stay open this long: long enough for any run. */
const LAB_SALE_OPEN_MS = 7 * 24 * 3_600_000;

/**
 * Creates a lab sale: one copy per strategy with the same stock. The atomic copy is a real
 * sale loaded by preloadSale; the durable-object copies are objects of their own (one
 * named by the sale's id, the merged one by mergedObjectName); the others are plain hashes. Also loads the scripts the strategies run, so the crowd's first EVALSHAs
 * hit. `objectHopMs` is the emulated round trip to the object (see LabSaleObject.seed).
 */
export async function createLabSale(
  { redis, objects }: Pick<LabBackends, "redis" | "objects">,
  stock: number,
  objectHopMs = 0,
): Promise<string> {
  const id = crypto.randomUUID();
  await Promise.all([
    objects.getByName(id).seed(stock, objectHopMs),
    objects.getByName(mergedObjectName(id)).seed(stock, objectHopMs),
    preloadSale(redis, {
      id: atomicSaleId(id),
      name: "lab: atomic",
      stock,
      startsAt: 0,
      endsAt: Date.now() + LAB_SALE_OPEN_MS,
      idSlot: 0,
      admission: MAX_ADMISSION, // the lab never throttles
      queue: { ...DEFAULT_QUEUE, seed: null, seedCommitment: null }, // nor queues
      admissionPaused: false,
      queueOpenedAt: null,
      notice: null,
      draw: null,
      lanes: [],
      variants: [],
      price: 0,
      currency: DEFAULT_CURRENCY,
      paymentWindowSec: 0,
      perUserLimit: 1,
      humanCheck: false,
      description: "",
      imageUrl: null,
      state: "active",
      version: 1,
      archivedAt: null,
      buckets: LAB_SALE_BUCKETS,
      bucketKey: null,
    }),
    ...HAND_ROLLED.map((strategy) => redis.hset(labKeys(strategy, id).meta, { stock, remaining: stock, seq: 0 })),
    redis.scriptLoad(LUA.labCas),
  ]);
  return id;
}

function copyReport(stock: number, remaining: number, accepted: number, buyers: number): LabCopyReport {
  return {
    stock,
    remaining,
    accepted,
    buyers,
    oversold: Math.max(0, accepted - stock),
    duplicates: accepted - buyers,
    unsold: Math.max(0, stock - accepted),
  };
}

async function handRolledReport(redis: Redis, strategy: HandRolledStrategy, labSaleId: string) {
  const keys = labKeys(strategy, labSaleId);
  const [[stock, remaining, seq], buyers] = await Promise.all([
    hashFields(redis, keys.meta, "stock", "remaining", "seq"),
    redis.hlen(keys.buyers),
  ]);
  if (stock == null) return undefined;
  return copyReport(Number(stock), Number(remaining), Number(seq), buyers);
}

async function atomicReport(redis: Redis, labSaleId: string) {
  const [live, buyers] = await Promise.all([
    readLiveSale(redis, atomicSaleId(labSaleId)),
    redis.hlen(atomicKeys(labSaleId).buyers),
  ]);
  return live && copyReport(live.stock, live.remaining, live.minted, buyers);
}

async function objectReport(objects: LabBackends["objects"], name: string) {
  const report = await objects.getByName(name).report();
  return report && { ...copyReport(report.stock, report.remaining, report.accepted, report.buyers), rpcs: report.rpcs };
}

/** Every copy of a lab sale, or undefined when the lab sale does not exist. */
export async function labSaleReport(
  { redis, objects }: Pick<LabBackends, "redis" | "objects">,
  labSaleId: string,
): Promise<LabSaleReport | undefined> {
  // Issued in the same tick, all the Redis reads travel as one auto-pipelined round trip.
  const [naive, lock, redlock, optimistic, designCard, atomic, durableObject, merged] = await Promise.all([
    ...HAND_ROLLED.map((strategy) => handRolledReport(redis, strategy, labSaleId)),
    atomicReport(redis, labSaleId),
    objectReport(objects, labSaleId),
    objectReport(objects, mergedObjectName(labSaleId)),
  ]);
  if (!naive || !lock || !redlock || !optimistic || !designCard || !atomic || !durableObject || !merged) return undefined;
  return {
    id: labSaleId,
    strategies: {
      naive,
      lock,
      redlock,
      optimistic,
      atomic,
      "durable-object": durableObject,
      "durable-object-merged": merged,
      "design-card": designCard,
    },
  };
}
