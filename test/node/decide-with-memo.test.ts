// The isolate memo in front of a store, as the lab's atomic and durable-object-merged copies
// use it: what the store answered once is refused in the isolate after, without asking again.
// The stores are plain functions standing in for the script call and the object's RPC (the
// real ones run in lab.test.ts); the clock is vitest's fake one, so the memo's one-second
// entries never lapse between two steps on a busy machine.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type Decided, decideWithMemo, memo, refusalWhileWaiting } from "../../src/checkout/isolate-memo.ts";

/** A store that answers `answer` and counts how often it was asked. */
function store(answer: Decided) {
  const asked = { count: 0 };
  const decide = async () => {
    asked.count++;
    return answer;
  };
  return { asked, decide };
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("decideWithMemo", () => {
  it("refuses the next buyer of a sold-out sale without asking the store, and only that sale", async () => {
    const sale = `memo-sold-out-${crypto.randomUUID()}`;
    const soldOut = store({ code: "SOLD_OUT" });
    expect(await decideWithMemo(sale, "u1", soldOut.decide)).toEqual({ code: "SOLD_OUT" });
    expect(await decideWithMemo(sale, "u2", soldOut.decide)).toEqual({ code: "SOLD_OUT" });
    expect(soldOut.asked.count).toBe(1);

    const open = store({ code: "OK", orderId: "7", remaining: 3, held: 1, limit: 1 });
    expect(await decideWithMemo(`${sale}-other`, "u2", open.decide)).toMatchObject({ code: "OK", orderId: "7" });
    expect(open.asked.count).toBe(1);
  });

  it("refuses a buyer at their limit with their order, from a store that has no admission bucket", async () => {
    const sale = `memo-repeat-${crypto.randomUUID()}`;
    const accepting = store({ code: "OK", orderId: "42", remaining: 9, held: 1, limit: 1 });
    expect(await decideWithMemo(sale, "buyer", accepting.decide)).toMatchObject({ code: "OK", orderId: "42" });
    expect(await decideWithMemo(sale, "buyer", accepting.decide)).toEqual({ code: "ALREADY_PURCHASED", orderId: "42" });
    expect(await decideWithMemo(sale, "another", accepting.decide)).toMatchObject({ code: "OK" });
    expect(accepting.asked.count).toBe(2);
  });

  it("forgets nothing it was not told: a store's failure is the caller's, and the next buyer asks again", async () => {
    const sale = `memo-failure-${crypto.randomUUID()}`;
    const failing = async (): Promise<Decided> => {
      throw new Error("unreachable");
    };
    await expect(decideWithMemo(sale, "u1", failing)).rejects.toThrow("unreachable");
    const soldOut = store({ code: "SOLD_OUT" });
    expect(await decideWithMemo(sale, "u1", soldOut.decide)).toEqual({ code: "SOLD_OUT" });
    expect(soldOut.asked.count).toBe(1);
  });

  it("lets a sold-out answer lapse after about a second: units may have come back", async () => {
    const sale = `memo-lapse-${crypto.randomUUID()}`;
    const soldOut = store({ code: "SOLD_OUT" });
    await decideWithMemo(sale, "u1", soldOut.decide);
    await vi.advanceTimersByTimeAsync(1_001);
    await decideWithMemo(sale, "u2", soldOut.decide);
    expect(soldOut.asked.count).toBe(2);
  });

  it("learns nothing of the stock from a quiet pass's sold-out: the next buyer asks the store", async () => {
    const sale = `memo-quiet-${crypto.randomUUID()}`;
    const quiet = store({ code: "SOLD_OUT", quiet: true });
    expect(await decideWithMemo(sale, "bot", quiet.decide)).toEqual({ code: "SOLD_OUT", quiet: true });
    const open = store({ code: "OK", orderId: "8", remaining: 2, held: 1, limit: 1 });
    expect(await decideWithMemo(sale, "person", open.decide)).toMatchObject({ code: "OK", orderId: "8" });
    expect(open.asked.count).toBe(1);
    // A merged call's: a plain checkout's answer (the sale takes them without a pass), and a quiet pass's.
    memo.learnFromCall(
      sale,
      [
        { userId: "plain", plain: true },
        { userId: "bot", plain: false },
      ],
      [
        { code: "OK", orderId: "9", remaining: 1, held: 1, limit: 1 },
        { code: "SOLD_OUT", quiet: true },
      ],
    );
    expect(refusalWhileWaiting(sale, "another")).toBeUndefined();
  });
});

// What a merged call's answers let the memo answer for the checkouts still waiting in its
// lane (reserve() and the merged object ask it before each next call).
describe("refusalWhileWaiting", () => {
  const plain = (userId: string, variant?: string) => ({ userId, variant, plain: true });
  const sold = (orderId: string): Decided => ({ code: "OK", orderId, remaining: 0, held: 1, limit: 1 });

  it("refuses a waiting checkout once a call sold the last unit: sold out, or the buyer's order", () => {
    const sale = `waiting-sold-out-${crypto.randomUUID()}`;
    expect(refusalWhileWaiting(sale, "u2")).toBeUndefined();
    memo.learnFromCall(sale, [plain("u1")], [sold("9")]);
    expect(refusalWhileWaiting(sale, "u2")).toEqual({ code: "SOLD_OUT" });
    // Redis checks the buyer's limit before stock, and names the order they hold.
    expect(refusalWhileWaiting(sale, "u1")).toEqual({ code: "ALREADY_PURCHASED", orderId: "9" });
  });

  it("refuses only the variant that sold out", () => {
    const sale = `waiting-variant-${crypto.randomUUID()}`;
    memo.learnFromCall(sale, [plain("u1", "s"), plain("u2", "m")], [{ code: "SOLD_OUT", variant: "s" }, sold("4")]);
    expect(refusalWhileWaiting(sale, "u3", "s")).toEqual({ code: "SOLD_OUT", variant: "s" });
    expect(refusalWhileWaiting(sale, "u3", "l")).toBeUndefined();
  });

  it("leaves to Redis a sale only checkouts with a pass (or a key) were decided in: it may have a waiting room", () => {
    const sale = `waiting-queued-${crypto.randomUUID()}`;
    memo.learnFromCall(sale, [{ userId: "u1", plain: false }], [sold("5")]);
    // A checkout without a pass would be refused QUEUE_PASS_REQUIRED there, before stock.
    expect(refusalWhileWaiting(sale, "u2")).toBeUndefined();
    memo.learnFromCall(sale, [plain("u3")], [{ code: "SOLD_OUT" }]);
    expect(refusalWhileWaiting(sale, "u2")).toEqual({ code: "SOLD_OUT" });
  });

  it("leaves to Redis a sale the memo knows paused, and forgets sold out after about a second", async () => {
    const paused = `waiting-paused-${crypto.randomUUID()}`;
    memo.learnFromCall(paused, [plain("u1")], [{ code: "SOLD_OUT" }]);
    memo.learn(paused, "u0", { code: "SALE_PAUSED" }, Date.now());
    expect(refusalWhileWaiting(paused, "u2")).toBeUndefined();

    const sale = `waiting-lapse-${crypto.randomUUID()}`;
    memo.learnFromCall(sale, [plain("u1")], [{ code: "SOLD_OUT" }]);
    await vi.advanceTimersByTimeAsync(1_001);
    expect(refusalWhileWaiting(sale, "u2")).toBeUndefined();
  });
});
