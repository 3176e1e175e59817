// The waiting room's push channel, as the lab tries it against polling: one long request per
// waiting buyer whose answer is a stream of server-sent events, each the standing a poll would
// have answered, sent at the pace a poll would have been told (retryAfterSec), until the buyer
// is let in (the event carries the pass) or will not be. Each event is read the way a poll is
// (the line's progress at most once a second per isolate), so what it saves is the requests:
// one per buyer and connection instead of one per poll (`npm run cost` prices both).
import type { KeepAlive } from "../isolate/shared-work";
import type { QueuePosition } from "../shared/api-types";

/** The buyer's standing as server-sent events, `positionNow` whenever a poll would have come, ending with the last. */
export function standingStream(positionNow: () => Promise<QueuePosition>, keepAlive: KeepAlive): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let ended: () => void = () => {};
  keepAlive(new Promise<void>((resolve) => (ended = resolve)));
  return new ReadableStream({
    start(controller) {
      const next = async () => {
        try {
          const position = await positionNow();
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
