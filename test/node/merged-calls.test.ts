// The merging logic on its own: who sends which call, hand-overs, stalls, deadlines. The
// clock is vitest's fake one, so the outcome depends on the logic alone, never on how busy
// the machine is. The calls are plain async functions standing in for the Redis script
// call; the real one runs in the crowd tests (merged-checkouts, spike).
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { MergedCalls, type MergedCallsOptions, MergedCallTimeout } from "../../src/checkout/merged-calls.ts";

const OPTIONS: MergedCallsOptions = { maxItems: 100, maxWaitMs: 2_000, stallMs: 1_000, leadCalls: 20, leadMs: 5_000, pollMs: 1 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Moves the fake clock on, running every timer due meanwhile. */
const advance = (ms: number) => vi.advanceTimersByTimeAsync(ms);
/** Lets the fake clock run until `promise` settles (the polling timers stop once every item is answered). */
async function settled<T>(promise: Promise<T>): Promise<T> {
  // Observed before the clock runs, so a rejection on the way is never unhandled.
  const outcome = promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  await vi.runAllTimersAsync();
  const result = await outcome;
  if (!result.ok) throw result.error;
  return result.value;
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A call that answers each item with "<item>!" after `ms`, and notes the batches it saw. */
function echo(ms: number) {
  const batches: string[][] = [];
  const call = async (items: string[]) => {
    batches.push(items);
    await sleep(ms);
    return items.map((i) => `${i}!`);
  };
  return { call, batches };
}

/**
 * An echo(30) whose answers teach what the memo would learn from a sold-out reply: `taught()`
 * is true from the moment its first call answers (before the leader makes its next).
 */
function teachingCall() {
  const { call: echoCall, batches } = echo(30);
  let learnt = false;
  const call = async (items: string[]) => {
    const answers = await echoCall(items);
    learnt = true;
    return answers;
  };
  return { call, batches, taught: () => learnt };
}

/** Collects what submit() hands to waitUntil, as a request would. */
function requests() {
  const kept: Promise<unknown>[] = [];
  return { keepAlive: (p: Promise<unknown>) => void kept.push(p), kept };
}

describe("merged calls", () => {
  it("sends a lone item at once, and everyone who arrives meanwhile in the next call", async () => {
    const calls = new MergedCalls<string, string>(OPTIONS);
    const { call, batches } = echo(30);
    const { keepAlive, kept } = requests();
    const first = calls.submit("sale", "a", call, keepAlive);
    await advance(5);
    const rest = ["b", "c", "d", "e"].map((i) => calls.submit("sale", i, call, keepAlive));
    expect(await settled(Promise.all([first, ...rest]))).toEqual(["a!", "b!", "c!", "d!", "e!"]);
    expect(batches).toEqual([["a"], ["b", "c", "d", "e"]]);
    expect(kept).toHaveLength(1); // one leader sent both calls
  });

  it("keeps lanes apart and caps a call at maxItems", async () => {
    const calls = new MergedCalls<string, string>({ ...OPTIONS, maxItems: 2 });
    const { call, batches } = echo(20);
    const { keepAlive } = requests();
    const answers = await settled(
      Promise.all([
        ...["a1", "a2", "a3", "a4", "a5"].map((i) => calls.submit("A", i, call, keepAlive)),
        calls.submit("B", "b1", call, keepAlive),
      ]),
    );
    expect(answers).toEqual(["a1!", "a2!", "a3!", "a4!", "a5!", "b1!"]);
    expect(batches).toEqual([["a1"], ["b1"], ["a2", "a3"], ["a4", "a5"]]);
  });

  it("hands the lead to a waiter once a leader has made leadCalls calls", async () => {
    const calls = new MergedCalls<string, string>({ ...OPTIONS, leadCalls: 1 });
    const { call, batches } = echo(20);
    const { keepAlive, kept } = requests();
    const first = calls.submit("sale", "a", call, keepAlive);
    await advance(5);
    const second = calls.submit("sale", "b", call, keepAlive);
    expect(await settled(Promise.all([first, second]))).toEqual(["a!", "b!"]);
    expect(batches).toEqual([["a"], ["b"]]);
    expect(kept).toHaveLength(2); // "b" led its own call after "a" stepped down
  });

  it("replaces a stalled leader; its items time out as sent, the others are served", async () => {
    const calls = new MergedCalls<string, string>({ ...OPTIONS, stallMs: 100, maxWaitMs: 400 });
    const hung = (_items: string[]) => new Promise<string[]>(() => {});
    const { call, batches } = echo(10);
    const { keepAlive } = requests();
    const stuck = calls.submit("sale", "stuck", hung, keepAlive).catch((e: unknown) => e);
    await advance(5);
    const served = calls.submit("sale", "next", call, keepAlive);
    await advance(90); // not stalled yet (95 ms since the leader's call): "next" waits behind it
    expect(batches).toEqual([]);
    await advance(20); // now it is: a waiter takes the lead
    expect(await settled(served)).toBe("next!");
    expect(batches).toEqual([["next"]]);
    const error = await settled(stuck);
    expect(error).toBeInstanceOf(MergedCallTimeout);
    expect((error as MergedCallTimeout).sent).toBe(true);
  });

  it("never sends an item whose wait ran out, and says it was not sent", async () => {
    const calls = new MergedCalls<string, string>({ ...OPTIONS, stallMs: 10_000, maxWaitMs: 60 });
    const { call, batches } = echo(150);
    const { keepAlive } = requests();
    // "a" itself times out in flight (150 ms > 60 ms): sent.
    const first = calls.submit("sale", "a", call, keepAlive).catch((e: unknown) => e);
    await advance(5);
    const error = await settled(calls.submit("sale", "b", call, keepAlive).catch((e: unknown) => e));
    expect(error).toBeInstanceOf(MergedCallTimeout);
    expect((error as MergedCallTimeout).sent).toBe(false);
    expect(((await first) as MergedCallTimeout).sent).toBe(true);
    expect(batches).toEqual([["a"]]); // "b" never reached a call
  });

  it("answers here, never in a call, the waiting items the call in flight taught it to answer", async () => {
    const calls = new MergedCalls<string, string>(OPTIONS);
    const { call, batches, taught } = teachingCall();
    // Only "plain" items may be answered here; the others still ride a call.
    const answerHere = (item: string) => (taught() && item.startsWith("plain") ? `${item}: sold out` : undefined);
    const { keepAlive } = requests();
    const first = calls.submit("sale", "plain-a", call, keepAlive, answerHere);
    await advance(5);
    const waiting = ["plain-b", "keyed-c", "plain-d"].map((i) => calls.submit("sale", i, call, keepAlive, answerHere));
    expect(await settled(Promise.all([first, ...waiting]))).toEqual([
      "plain-a!",
      "plain-b: sold out",
      "keyed-c!",
      "plain-d: sold out",
    ]);
    expect(batches).toEqual([["plain-a"], ["keyed-c"]]);
  });

  it("makes no further call when every waiting item is answered here", async () => {
    const calls = new MergedCalls<string, string>(OPTIONS);
    const { call, batches, taught } = teachingCall();
    const answerHere = () => (taught() ? "sold out" : undefined);
    const { keepAlive } = requests();
    const first = calls.submit("sale", "a", call, keepAlive, answerHere);
    await advance(5);
    const waiting = ["b", "c"].map((i) => calls.submit("sale", i, call, keepAlive, answerHere));
    expect(await settled(Promise.all([first, ...waiting]))).toEqual(["a!", "sold out", "sold out"]);
    expect(batches).toEqual([["a"]]);
  });

  it("looks for an answer first when its call is due, and after a slow spell no later than 100 ms", async () => {
    const calls = new MergedCalls<string, string>({ ...OPTIONS, stallMs: 10_000, maxWaitMs: 10_000 });
    let callMs = 3_000;
    const call = async (items: string[]) => {
      await sleep(callMs);
      return items.map((i) => `${i}!`);
    };
    const { keepAlive } = requests();
    expect(await settled(calls.submit("sale", "slow", call, keepAlive))).toBe("slow!");
    // The calls are fast again, but the average still says 3 s: the first look waits 100 ms, not 2.4 s.
    callMs = 10;
    let answered = false;
    const fast = calls.submit("sale", "fast", call, keepAlive).then((answer) => {
      answered = true;
      return answer;
    });
    await advance(99);
    expect(answered).toBe(false); // answered in its slot at 10 ms, not looked at yet
    await advance(2);
    expect(answered).toBe(true);
    expect(await fast).toBe("fast!");
  });

  it("picks up an answer given here by the first look it set for its call, and never sends it", async () => {
    const calls = new MergedCalls<string, string>({ ...OPTIONS, stallMs: 10_000, maxWaitMs: 10_000 });
    const { call: echoCall, batches } = echo(30);
    let soldOut = false;
    const call = async (items: string[]) => {
      const answers = await echoCall(items);
      soldOut ||= items.includes("last");
      return answers;
    };
    const answerHere = (item: string) => (soldOut ? `${item}: sold out` : undefined);
    const { keepAlive } = requests();
    expect(await settled(calls.submit("sale", "warm", call, keepAlive, answerHere))).toBe("warm!"); // calls take 30 ms
    const last = calls.submit("sale", "last", call, keepAlive, answerHere);
    await advance(5);
    let answered = false;
    const late = calls.submit("sale", "late", call, keepAlive, answerHere).then((answer) => {
      answered = true;
      return answer;
    });
    // Queued 5 ms into a 30 ms call: due after 25 + 30 ms, first look at 80% of that (44 ms).
    // Its answer is written at 25 ms, when "last" lands, and picked up at that look.
    await advance(45);
    expect(answered).toBe(true);
    expect(await late).toBe("late: sold out");
    expect(await last).toBe("last!");
    expect(batches).toEqual([["warm"], ["last"]]);
  });

  it("fails every item of a call that errs or answers the wrong number of items", async () => {
    const calls = new MergedCalls<string, string>(OPTIONS);
    const { keepAlive } = requests();
    const boom = async (_items: string[]): Promise<string[]> => {
      throw new Error("redis down");
    };
    await expect(settled(calls.submit("x", "a", boom, keepAlive))).rejects.toThrow("redis down");
    const short = async (_items: string[]) => [] as string[];
    await expect(settled(calls.submit("y", "a", short, keepAlive))).rejects.toThrow(/answered 0 of 1/);
  });
});
