// The answer a waiting page gets about its buyer (the poll's, and the lab's stream's events):
// the buyer's standing in the line, its pass signed when let in.
import type { Redis } from "../redis/client";
import type { QueuePosition } from "../shared/api-types";
import { type BucketSplit, type Line, PUBLIC_LINE } from "../shared/keys";
import type { Progress } from "../shared/waiting-room-progress";
import { signPass } from "./signed-claims";
import { standing } from "./waiting-room";

/** A ticket's or a pass's claim naming its line: none for the public line. */
export const lineClaim = (line: Line) => (line === PUBLIC_LINE ? {} : { l: line });

/** The standing of the buyer at `place` of `line`, its pass (of that line) signed with `secret` when admitted. */
export async function queuePosition(
  redis: Redis,
  secret: string,
  saleId: string,
  split: BucketSplit,
  userId: string,
  line: Line,
  place: number | null,
  progress: Progress,
): Promise<QueuePosition> {
  const { pass, ...rest } = await standing(redis, saleId, split, userId, line, place, progress);
  const claims = pass && { s: saleId, u: userId, p: pass.place, e: pass.expiresAt, ...lineClaim(line) };
  return {
    ...rest,
    pass: claims && (await signPass(secret, claims)),
    passExpiresAt: pass && new Date(pass.expiresAt).toISOString(),
  };
}
