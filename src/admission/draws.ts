// A sale's draw as entrants meet it (docs/draws.md): entering, changing or withdrawing an
// entry is one script call (lua/draw-enter.lua, one round trip); where an entry stands is
// read from Redis while entries are open and from D1 once the draw committed them.
import { hashEntries, type Redis } from "../redis/client";
import { LUA, runScript } from "../redis/scripts";
import { bucketSplitOf } from "../sales/known-sales";
import type { Sale } from "../sales/sale";
import { toHex } from "../shared/hex";
import { accessCodeKeys, addressUsersKey, buyerKeys, codeShardOf, saleKeys } from "../shared/keys";
import { DEFAULT_VARIANT } from "../shared/limits";

/** An entry as Redis holds it while entries are open. */
export interface HeldEntry {
  variant: string;
  quantity: number;
  enteredAt: number;
  /** The entrant's secret (hex): with their user id it makes the leaf's entrant hash. */
  receipt: string;
  /** e: entered, q: entered quietly (never committed), w: withdrawn. */
  state: "e" | "q" | "w";
  /** The presale lane whose draw the entry is in ("" the public draw), and the hash of the code it entered with. */
  lane: string;
  codeHash: string | undefined;
}

export type EnterOutcome =
  | { code: "ENTERED" | "CHANGED" | "WITHDRAWN"; entry: HeldEntry }
  | { code: "NOT_ENTERED" | "DRAW_NOT_OPEN" | "DRAW_CLOSED" | "SALE_NOT_FOUND" | "NOT_A_DRAW" | "SALE_CANCELLED" }
  | { code: "VARIANT_NOT_FOUND" | "BUCKETS_CHANGED" | "ACCESS_CODE_INVALID" | "ACCESS_CODE_USED" };

/** What an entry asks for, and who asks. */
export interface EntryRequest {
  userId: string;
  variant: string | undefined;
  quantity: number;
  /** The client address, for one account one seat. */
  ip: string | undefined;
  /** User ids one address may bring (0: no limit), and how long its record lasts. */
  seats: { limit: number; ttlSeconds: number };
  /** A first entry is taken quietly: a deny rule matched, or the human check failed. */
  quietly: boolean;
  /** The hash of the access code sent: a first entry with one enters the code's lane (docs/lanes.md). */
  codeHash?: string;
}

function parseEnterReply(reply: unknown): EnterOutcome {
  if (!Array.isArray(reply) || reply[0] !== "draw-enter/2" || reply.length !== 9) {
    throw new Error("lua/draw-enter.lua replied in an unknown layout");
  }
  const code = String(reply[1]);
  switch (code) {
    case "ENTERED":
    case "CHANGED":
    case "WITHDRAWN":
      return {
        code,
        entry: {
          variant: String(reply[2]),
          quantity: Number(reply[3]),
          enteredAt: Number(reply[4]),
          receipt: String(reply[5]),
          state: String(reply[6]) as HeldEntry["state"],
          lane: String(reply[8]),
          codeHash: undefined,
        },
      };
    case "NOT_ENTERED":
    case "DRAW_NOT_OPEN":
    case "DRAW_CLOSED":
    case "SALE_NOT_FOUND":
    case "NOT_A_DRAW":
    case "SALE_CANCELLED":
    case "VARIANT_NOT_FOUND":
    case "BUCKETS_CHANGED":
    case "ACCESS_CODE_INVALID":
    case "ACCESS_CODE_USED":
      return { code };
    default:
      throw new Error(`lua/draw-enter.lua replied with outcome ${code}`);
  }
}

/** A fresh receipt: 16 random bytes, hex. */
const newReceipt = () => toHex(crypto.getRandomValues(new Uint8Array(16)));

async function callDrawEnter(redis: Redis, sale: Sale, op: "enter" | "withdraw", request: EntryRequest): Promise<EnterOutcome> {
  const keys = saleKeys(sale.id);
  const codes = accessCodeKeys(sale.id);
  const { codeHash = "" } = request;
  const reply = await runScript<unknown>(
    redis,
    LUA.drawEnter,
    [
      keys.meta,
      keys.draw,
      buyerKeys(sale.id, request.userId, bucketSplitOf(sale)).entries,
      addressUsersKey(sale.id, request.ip ?? ""),
      ...(codeHash === "" ? [] : [codes.batches, codes.shard(codeShardOf(codeHash))]),
    ],
    [
      op,
      request.userId,
      request.variant ?? DEFAULT_VARIANT,
      String(request.quantity),
      newReceipt(),
      String(request.ip ? request.seats.limit : 0),
      String(request.seats.ttlSeconds),
      String(sale.buckets),
      request.quietly ? "1" : "0",
      codeHash,
    ],
  );
  return parseEnterReply(reply);
}

/** Enters the draw, or changes the caller's entry (its receipt and time of entry stay). */
export const enterDraw = (redis: Redis, sale: Sale, request: EntryRequest) => callDrawEnter(redis, sale, "enter", request);

/** Withdraws the caller's entry while entries are open. */
export const withdrawEntry = (redis: Redis, sale: Sale, userId: string) =>
  callDrawEnter(redis, sale, "withdraw", {
    userId,
    variant: undefined,
    quantity: 0,
    ip: undefined,
    seats: { limit: 0, ttlSeconds: 60 },
    quietly: false,
  });

/** The caller's entry as Redis holds it, or undefined. */
export async function heldEntry(redis: Redis, sale: Sale, userId: string): Promise<HeldEntry | undefined> {
  const record = await redis.hget<string>(buyerKeys(sale.id, userId, bucketSplitOf(sale)).entries, userId);
  return record === null ? undefined : parseEntry(String(record));
}

/**
 * An entry's record, "<variant>|<quantity>|<entered at ms>|<receipt>|<state>", and for a lane's
 * entry "|<lane>|<code hash>" after it (lua/draw-enter.lua).
 */
export function parseEntry(record: string): HeldEntry | undefined {
  const match = /^(.*?)\|(\d+)\|(\d+)\|([0-9a-f]+)\|([eqw])(?:\|([a-z0-9-]+)\|([0-9a-f]+))?$/.exec(record);
  if (!match) return undefined;
  const [, variant, quantity, at, receipt, state, lane = "", codeHash] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    HeldEntry["state"],
    string | undefined,
    string | undefined,
  ];
  return { variant, quantity: Number(quantity), enteredAt: Number(at), receipt, state, lane, codeHash };
}

/** The standing entries' counts while entries are open: in all, and entries and units asked per variant. */
export async function entryCounts(
  redis: Redis,
  saleId: string,
): Promise<{ standing: number; byVariant: Map<string, { entries: number; units: number }>; sealed: boolean }> {
  const fields = await hashEntries(redis, saleKeys(saleId).draw);
  const byVariant = new Map<string, { entries: number; units: number }>();
  let standing = 0;
  let sealed = false;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const [field, value] = [String(fields[i]), Number(fields[i + 1])];
    if (field === "standing") standing = value;
    else if (field === "sealed") sealed = true;
    else if (field.startsWith("e:") || field.startsWith("u:")) {
      const variant = field.slice(2);
      const counts = byVariant.get(variant) ?? { entries: 0, units: 0 };
      if (field.startsWith("e:")) counts.entries = value;
      else counts.units = value;
      byVariant.set(variant, counts);
    }
  }
  return { standing, byVariant, sealed };
}
