import { decideWithMemo } from "../../checkout/isolate-memo";
import { MergedCalls } from "../../checkout/merged-calls";
import { CHECKOUT_MERGING } from "../../checkout/reserve";
import { mergedObjectMemoId, mergedObjectName } from "../keys";
import type { ObjectCheckout } from "../sale-object";
import type { Strategy } from "../strategy";

const calls = new MergedCalls<string, ObjectCheckout>(CHECKOUT_MERGING);

/**
 * The Durable Object at its best, built as this project builds the Redis checkout: the
 * checkouts this isolate holds for the lab sale travel as one RPC (the same merging and
 * batching rule as reserve()), the object checks and writes the whole batch in one
 * synchronous transaction (LabSaleObject.checkoutBatch), and the isolate memo refuses sold
 * out and repeat buyers here, with no RPC, as it does for the real checkout.
 */
export const durableObjectMergedCheckout: Strategy = async ({ objects, keepAlive }, labSaleId, userId) => {
  // The call runs in the request that leads the lane, which names its own stub.
  const call = (userIds: string[]) => objects.getByName(mergedObjectName(labSaleId)).checkoutBatch(userIds);
  const decided = await decideWithMemo(mergedObjectMemoId(labSaleId), userId, async () => {
    const answer = await calls.submit(labSaleId, userId, call, keepAlive);
    // One unit a buyer, as every lab copy sells.
    return answer.code === "OK" ? { ...answer, held: 1, limit: 1 } : answer;
  });
  return decided.code === "OK" ? { code: "OK", orderId: decided.orderId } : decided;
};
