// A Map that holds at most a number of entries, forgetting the one first written: for code
// that keeps per-caller state in a Map it is handed (the global limits' ephemeral cache, in
// src/redis/sliding-window.ts), so a crowd of distinct callers cannot grow an isolate's memory
// without bound.

export class BoundedMap<K, V> extends Map<K, V> {
  constructor(private readonly maxEntries: number) {
    super();
  }

  override set(key: K, value: V): this {
    if (!this.has(key) && this.size >= this.maxEntries) {
      const oldest = this.keys().next();
      if (!oldest.done) this.delete(oldest.value);
    }
    return super.set(key, value);
  }
}
