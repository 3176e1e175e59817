// The waiting room's push channel, as the lab tries it against polling: one long request per
// waiting buyer whose answer is a stream of server-sent events, each the standing a poll would
// have answered, sent at the pace a poll would have been told (retryAfterSec), until the buyer
// is let in (the event carries the pass) or will not be. Everything a poll reads is read the
// same way (the line's progress at most once a second per isolate), so what it saves is the
// requests: one per buyer and connection instead of one per poll (`npm run cost` prices both).
// A prototype: places already known only (a fifo line, or a random one's after its draw).
import { signPass } from "../admission/signed-claims";
import { readProgress, standing } from "../admission/waiting-room";
import type { KeepAlive } from "../isolate/shared-work";
import type { Redis } from "../redis/client";
import { bucketSplitOf, knownSale } from "../sales/known-sales";
import type { QueuePosition } from "../shared/api-types";

export interface StandingStreamInput {
  redis: Redis;
  db: D1Database;
  keepAlive: KeepAlive;
  /** What passes are signed with (JWT_SECRET). */
  secret: string;
  saleId: string;
  userId: string;
  place: number;
}

/** The poll's answer for the buyer now, its pass signed when let in. */
async function positionNow(input: StandingStreamInput): Promise<QueuePosition> {
  const { redis, db, keepAlive, secret, saleId, userId, place } = input;
  const split = bucketSplitOf(await knownSale(db, saleId, keepAlive));
  const progress = await readProgress(redis, saleId, split.count, keepAlive);
  const { pass, ...rest } = await standing(redis, saleId, split, userId, place, progress);
  return {
    ...rest,
    pass: pass && (await signPass(secret, { s: saleId, u: userId, p: pass.place, e: pass.expiresAt })),
    passExpiresAt: pass && new Date(pass.expiresAt).toISOString(),
  };
}

/** The buyer's standing as server-sent events, one whenever a poll would have come, ending with the last. */
export function standingStream(input: StandingStreamInput): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let ended: () => void = () => {};
  input.keepAlive(new Promise<void>((resolve) => (ended = resolve)));
  return new ReadableStream({
    start(controller) {
      const next = async () => {
        try {
          const position = await positionNow(input);
          controller.enqueue(encoder.encode(`data: ${JSON.stringify(position)}\n\n`));
          if (position.state !== "waiting") {
            controller.close();
            ended();
            return;
          }
          timer = setTimeout(() => void next(), position.retryAfterSec * 1000);
        } catch (err) {
          controller.error(err);
          ended();
        }
      };
      void next();
    },
    cancel() {
      clearTimeout(timer);
      ended();
    },
  });
}
