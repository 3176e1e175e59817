// The isolate's per-caller token buckets (src/isolate/token-buckets.ts), each kept as one
// number: the time it is full again. The clock is passed in, so nothing here waits.
import { expect, it } from "vitest";
import { LocalTokenBuckets } from "../../src/isolate/token-buckets.ts";

/** An epoch-sized time, as Date.now() gives: a third of a second must not be lost to rounding. */
const T = 1_790_000_000_000;

it("gives a new caller its burst, then refuses until a token is back, refilled at its rate", () => {
  const buckets = new LocalTokenBuckets(3, 2); // a token every 333.3 ms
  expect(buckets.take("a", T)).toEqual({ ok: true });
  expect(buckets.take("a", T)).toEqual({ ok: true });
  expect(buckets.take("a", T)).toEqual({ ok: false, retryAfterMs: 334 });
  expect(buckets.take("b", T)).toEqual({ ok: true }); // each caller its own bucket
  expect(buckets.take("a", T + 333)).toEqual({ ok: false, retryAfterMs: 1 });
  expect(buckets.take("a", T + 334)).toEqual({ ok: true });
  expect(buckets.take("a", T + 334).ok).toBe(false);
  // Idle for long, the bucket holds its burst and no more.
  expect(buckets.take("a", T + 60_000).ok).toBe(true);
  expect(buckets.take("a", T + 60_000).ok).toBe(true);
  expect(buckets.take("a", T + 60_000).ok).toBe(false);
});

it("takes back a refunded token, never past a full bucket", () => {
  const buckets = new LocalTokenBuckets(1, 2);
  buckets.take("a", T);
  buckets.take("a", T);
  buckets.refund("a");
  expect(buckets.take("a", T).ok).toBe(true);
  expect(buckets.take("a", T).ok).toBe(false);
  // Refunds beyond what was taken add nothing: a full bucket stays at its burst.
  for (let i = 0; i < 5; i++) buckets.refund("a");
  expect([buckets.take("a", T).ok, buckets.take("a", T).ok, buckets.take("a", T).ok]).toEqual([true, true, false]);
  buckets.refund("unknown"); // a caller it does not hold: nothing to give back, nothing added
  expect(buckets.take("unknown", T)).toEqual({ ok: true });
});

it("forgets the least recently served caller first when it holds its most", () => {
  const buckets = new LocalTokenBuckets(1, 1, 2);
  buckets.take("a", T);
  buckets.take("b", T);
  expect(buckets.take("a", T).ok).toBe(false); // a refusal does not make "a" recent
  buckets.take("c", T); // room for "c": "a" goes
  expect(buckets.take("a", T).ok).toBe(true); // a new bucket, full; "b" goes
  expect(buckets.take("c", T).ok).toBe(false); // still held, still empty
  expect(buckets.take("b", T).ok).toBe(true);
});

it("drops buckets that are full again as new callers come: a crowd of one-time callers holds only its last moments", () => {
  const buckets = new LocalTokenBuckets(20, 40); // one token back every 50 ms
  // 10,000 callers, one request each, one every millisecond: each bucket is full again 50 ms after its take.
  for (let i = 0; i < 10_000; i++) expect(buckets.take(`caller-${i}`, T + i).ok).toBe(true);
  expect(buckets.size).toBeLessThanOrEqual(50);
  // Ten seconds on, all are full again: the next new caller's take drops them all.
  for (let i = 0; i < 40; i++) buckets.take("busy", T + 20_000);
  expect(buckets.size).toBe(1);
  // A caller still short of tokens is kept, however many come after it, and still limited.
  for (let i = 0; i < 1_000; i++) buckets.take(`later-${i}`, T + 20_000 + i / 100);
  expect(buckets.take("busy", T + 20_010)).toEqual({ ok: false, retryAfterMs: 40 });
});
