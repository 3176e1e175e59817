// The sharing rule on its own (src/isolate/shared-work.ts): who does the work, who picks its
// outcome up, what happens when the request doing it is gone. The clock is vitest's fake one,
// so outcomes depend on the logic alone. A work that never settles stands for a loader whose
// request the runtime cancelled or stalled mid-load: a fake, because that cannot be caused for
// real here: in the local stack a request whose client disconnects runs on to the end
// (test/node/shared-reads.test.ts disconnects for real, and passed before this rule too).
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { IsolateCache } from "../../src/isolate/isolate-cache.ts";
import { pickUp, SharedWork } from "../../src/isolate/shared-work.ts";

const OPTIONS = { stallMs: 1_000, pollMs: 5 };

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** Observed before the clock runs, so a rejection on the way is never unhandled. */
const outcomeOf = <T>(p: Promise<T>) =>
  p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );

describe("SharedWork", () => {
  it("runs the work once for concurrent callers; the others pick its value up; the worker's request keeps it alive", async () => {
    const shared = new SharedWork<string>(OPTIONS);
    const kept: Promise<unknown>[] = [];
    let runs = 0;
    const work = async () => {
      runs++;
      await new Promise((r) => setTimeout(r, 100));
      return "page";
    };
    const answers = Array.from({ length: 10 }, () => outcomeOf(shared.run("sale:1", work, (p) => kept.push(p))));
    await vi.runAllTimersAsync();
    expect(await Promise.all(answers)).toEqual(Array(10).fill({ ok: true, value: "page" }));
    expect(runs).toBe(1);
    expect(kept).toHaveLength(1);
    expect(shared.size).toBe(0);
  });

  it("passes the work's error to every waiter, and the next caller runs it again", async () => {
    const shared = new SharedWork<string>(OPTIONS);
    const failing = async () => {
      await new Promise((r) => setTimeout(r, 10));
      throw new Error("D1 unavailable");
    };
    const answers = Array.from({ length: 3 }, () => outcomeOf(shared.run("k", failing, () => {})));
    await vi.runAllTimersAsync();
    for (const answer of await Promise.all(answers))
      expect(answer).toMatchObject({ ok: false, error: { message: "D1 unavailable" } });
    const again = outcomeOf(
      shared.run(
        "k",
        async () => "ok",
        () => {},
      ),
    );
    await vi.runAllTimersAsync();
    expect(await again).toEqual({ ok: true, value: "ok" });
  });

  it("a waiter whose worker never answers (its request cancelled) does the work itself after stallMs", async () => {
    const shared = new SharedWork<string>(OPTIONS);
    const cancelled = outcomeOf(
      shared.run(
        "k",
        () => new Promise<string>(() => {}),
        () => {},
      ),
    );
    let runs = 0;
    const own = async () => {
      runs++;
      await new Promise((r) => setTimeout(r, 100));
      return "read for itself";
    };
    const waiters = Array.from({ length: 5 }, () => outcomeOf(shared.run("k", own, () => {})));
    await vi.advanceTimersByTimeAsync(OPTIONS.stallMs / 2);
    expect(runs).toBe(0); // still waiting for the first: it has not stalled yet
    await vi.advanceTimersByTimeAsync(OPTIONS.stallMs * 2);
    expect(await Promise.all(waiters)).toEqual(Array(5).fill({ ok: true, value: "read for itself" }));
    // The first waiter to see the stall took over; the others joined its run.
    expect(runs).toBe(1);
    void cancelled;
  });

  it("runInBackground starts the work only when nobody runs it", async () => {
    const shared = new SharedWork<string>(OPTIONS);
    let runs = 0;
    const work = async () => {
      runs++;
      await new Promise((r) => setTimeout(r, 50));
      return "rebuilt";
    };
    shared.runInBackground("k", work, () => {});
    shared.runInBackground("k", work, () => {});
    await vi.runAllTimersAsync();
    expect(runs).toBe(1);
  });
});

describe("pickUp", () => {
  it("settles from the caller's own timers once an outcome is there", async () => {
    const slot: { outcome?: { ok: true; value: number } } = {};
    const picked = outcomeOf(pickUp(() => slot.outcome, 5));
    await vi.advanceTimersByTimeAsync(50);
    slot.outcome = { ok: true, value: 42 };
    await vi.advanceTimersByTimeAsync(50);
    expect(await picked).toEqual({ ok: true, value: 42 });
  });
});

describe("IsolateCache bounds", () => {
  it("keeps its entries within maxBytes, evicting the oldest, whatever a crowd sends", () => {
    const maxBytes = 64 * 1024;
    const cache = new IsolateCache<string>({ ttlMs: 60_000, maxEntries: 1_000_000, maxBytes });
    for (let i = 0; i < 100_000; i++) cache.set(`buyer-${i}`, "x".repeat(100));
    expect(cache.weight).toBeLessThanOrEqual(maxBytes);
    expect(cache.get("buyer-99999")).toBe("x".repeat(100));
    expect(cache.get("buyer-0")).toBeUndefined();
  });

  it("drops what has expired as new entries come: a crowd's writes hold the last TTL's entries, not the last maxEntries", () => {
    const T = 1_790_000_000_000;
    const cache = new IsolateCache<string>({ ttlMs: 1_000, maxEntries: 100_000 });
    // 10,000 buyers, one every millisecond: each entry lives a second.
    for (let i = 0; i < 10_000; i++) cache.set(`buyer-${i}`, "order", undefined, T + i);
    expect(cache.size).toBeLessThanOrEqual(1_000);
    expect(cache.get("buyer-9999", T + 9_999)).toBe("order");
    // An entry set with a longer TTL of its own is kept past the others (those set after it wait for it, within maxEntries).
    cache.set("long", "kept", 60_000, T + 10_000);
    for (let i = 0; i < 3_000; i++) cache.set(`later-${i}`, "order", undefined, T + 10_000 + i);
    expect(cache.get("long", T + 13_000)).toBe("kept");
  });

  it("does not keep a value bigger than the whole cache", () => {
    const cache = new IsolateCache<string>({ ttlMs: 60_000, maxBytes: 1_000 });
    cache.set("small", "a");
    cache.set("huge", "b".repeat(10_000));
    expect(cache.get("huge")).toBeUndefined();
    expect(cache.get("small")).toBe("a");
  });
});
