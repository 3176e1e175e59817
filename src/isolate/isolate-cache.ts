import { type KeepAlive, SharedWork } from "./shared-work";

/**
 * A small per-isolate cache with a short TTL and single-flight loading: while one request
 * loads a key, concurrent requests for it pick its answer up (src/isolate/shared-work.ts)
 * instead of stampeding the origin (cache breakdown). Bounded in entries and in bytes (an
 * isolate has 128 MB, whatever a crowd sends), oldest entries evicted first.
 * Hand-written because it is a few dozen lines and must run in workerd without Node APIs.
 */
export interface IsolateCacheOptions {
  ttlMs: number;
  /** @default 10_000 */
  maxEntries?: number;
  /** What its entries may weigh together, as `weightOf` counts. @default 1 MiB */
  maxBytes?: number;
}

/** Map and entry bookkeeping per entry, on top of its key and value. */
const ENTRY_OVERHEAD_BYTES = 100;

/**
 * About what an entry costs the heap: its key and its value (a string as it is, an object as
 * JSON, anything else as 8 characters), two bytes a character (a string's worst case).
 * Computed once per write, never per read.
 */
export function weightOf(key: string, value: unknown): number {
  const chars = typeof value === "string" ? value.length : typeof value === "object" ? (JSON.stringify(value) ?? "").length : 8;
  return ENTRY_OVERHEAD_BYTES + 2 * (key.length + chars);
}

/** How long a waiter waits for another request's load before loading for itself. */
const LOAD_STALL_MS = 2_000;
/** How soon a waiter first looks for the load's answer (backing off to 4x). */
const LOAD_POLL_MS = 5;

export class IsolateCache<T> {
  private readonly entries = new Map<string, { value: T; expires: number; bytes: number }>();
  private readonly loads = new SharedWork<T>({ stallMs: LOAD_STALL_MS, pollMs: LOAD_POLL_MS });
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly maxBytes: number;
  private bytes = 0;

  constructor({ ttlMs, maxEntries = 10_000, maxBytes = 1 << 20 }: IsolateCacheOptions) {
    this.ttlMs = ttlMs;
    this.maxEntries = maxEntries;
    this.maxBytes = maxBytes;
  }

  /** What its entries weigh now (for the soak's figures and tests). */
  get weight(): number {
    return this.bytes;
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string, now = Date.now()): T | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    if (hit.expires > now) return hit.value;
    this.delete(key);
    return undefined;
  }

  /**
   * Keeps `value` for `key`. Entries that have expired are dropped first, oldest first (the
   * map's order is the order they were set in), so a cache a crowd writes to holds the last
   * TTL's entries, not the last maxEntries: a heap kept small is a garbage collection kept
   * short. An entry set with a longer TTL of its own holds back those set after it until it
   * expires (maxEntries still bounds them). Then the oldest are evicted until the new one fits.
   */
  set(key: string, value: T, ttlMs = this.ttlMs, now = Date.now()): void {
    this.delete(key);
    const bytes = weightOf(key, value);
    if (bytes > this.maxBytes) return; // bigger than the whole cache: not kept at all
    for (const [oldest, entry] of this.entries) {
      const fits = this.entries.size < this.maxEntries && this.bytes + bytes <= this.maxBytes;
      if (fits && entry.expires > now) break;
      this.delete(oldest);
    }
    this.entries.set(key, { value, expires: now + ttlMs, bytes });
    this.bytes += bytes;
  }

  delete(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }

  /**
   * The cached value, or `load`'s: one request of the isolate loads a key at a time, kept
   * alive by its own `keepAlive`; the others pick its answer up, or load for themselves if
   * it stalls.
   */
  getOrLoad(key: string, load: () => Promise<T>, keepAlive: KeepAlive): Promise<T> {
    const hit = this.get(key);
    if (hit !== undefined) return Promise.resolve(hit);
    return this.loads.run(
      key,
      async () => {
        const value = await load();
        this.set(key, value);
        return value;
      },
      keepAlive,
    );
  }
}
