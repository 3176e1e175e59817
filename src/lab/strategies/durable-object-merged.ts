import { type Decided, decideWithMemo, memo, refusalWhileWaiting } from "../../checkout/isolate-memo";
import { MergedCalls } from "../../checkout/merged-calls";
import { CHECKOUT_MERGING } from "../../checkout/reserve";
import { mergedObjectMemoId, mergedObjectName } from "../keys";
import type { ObjectCheckout } from "../sale-object";
import type { Strategy } from "../strategy";

const calls = new MergedCalls<string, Decided>(CHECKOUT_MERGING);

/** The object's answer as the memo reads it: one unit a buyer, as every lab copy sells. */
const decided = (answer: ObjectCheckout): Decided => (answer.code === "OK" ? { ...answer, held: 1, limit: 1 } : answer);

/**
 * The Durable Object at its best, built as this project builds the Redis checkout: the
 * checkouts this isolate holds for the lab sale travel as one RPC (the same merging and
 * batching rule as reserve()), the object checks and writes the whole batch in one
 * synchronous transaction (LabSaleObject.checkoutBatch), and the isolate memo refuses sold
 * out and repeat buyers here, with no RPC, as it does for the real checkout: at the door,
 * and (once an RPC's answers show the sale sold out) those still waiting for the next RPC.
 */
export const durableObjectMergedCheckout: Strategy = async ({ objects, keepAlive }, labSaleId, userId) => {
  const memoId = mergedObjectMemoId(labSaleId);
  // The call runs in the request that leads the lane, which names its own stub.
  const call = async (userIds: string[]) => {
    const answers = (await objects.getByName(mergedObjectName(labSaleId)).checkoutBatch(userIds)).map(decided);
    // Every lab checkout is plain: one unit, no key, no pass.
    memo.learnFromCall(
      memoId,
      userIds.map((id) => ({ userId: id, plain: true })),
      answers,
    );
    return answers;
  };
  const answerHere = (waiting: string) => refusalWhileWaiting(memoId, waiting);
  const outcome = await decideWithMemo(memoId, userId, () => calls.submit(labSaleId, userId, call, keepAlive, answerHere));
  return outcome.code === "OK" ? { code: "OK", orderId: outcome.orderId } : outcome;
};
