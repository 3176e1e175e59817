// `/subscribe/<channel...>` and `/psubscribe/<pattern...>` as server-sent events, in the
// shape @upstash/redis parses: `data: subscribe,<ch>,<n>`, `data: message,<ch>,<payload>`,
// `data: pmessage,<pattern>,<ch>,<payload>`, payloads as UTF-8 text (never base64).
// The client leaves by aborting the request; the Redis connection goes with it.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Redis } from "ioredis";
import { RedisUnavailableError } from "./redis.js";

export interface Subscription {
  pattern: boolean;
  channels: string[];
  /** A fresh connection for this subscription alone. */
  open(): Promise<Redis>;
  close(conn: Redis): void;
  headers(): Record<string, string>;
  /** The emulated hop's one-way delay (see GatewayOptions.latencyMs), added to every message. */
  delayMs(): number;
}

/** Resolves once the stream is under way; throws RedisUnavailableError before any byte is sent. */
export async function serveSubscription(req: IncomingMessage, res: ServerResponse, sub: Subscription): Promise<void> {
  req.resume(); // The client sends `[]`; nothing to read.
  let conn: Redis | undefined;
  let closed = false;
  res.once("close", () => {
    closed = true;
    if (conn) sub.close(conn);
  });
  conn = await sub.open();
  if (closed) return sub.close(conn);

  // Messages can arrive before the confirmations are written: hold them until then.
  let held: string[] | undefined = [];
  // Under an emulated hop each message travels half a round trip, in the order it came.
  let lastDueAt = 0;
  const write = (event: string) => {
    const delay = sub.delayMs();
    if (delay <= 0) return res.write(event);
    lastDueAt = Math.max(Date.now() + delay, lastDueAt);
    setTimeout(() => res.writable && res.write(event), lastDueAt - Date.now());
  };
  const send = (fields: (string | Buffer | number)[]) => {
    const event = `data: ${fields.join(",")}\n\n`;
    if (held) held.push(event);
    else write(event);
  };
  if (sub.pattern) {
    conn.on("pmessageBuffer", (pattern: Buffer, channel: Buffer, message: Buffer) =>
      send(["pmessage", pattern, channel, message]),
    );
  } else {
    conn.on("messageBuffer", (channel: Buffer, message: Buffer) => send(["message", channel, message]));
  }

  try {
    await (sub.pattern ? conn.psubscribe(...sub.channels) : conn.subscribe(...sub.channels));
  } catch (error) {
    sub.close(conn);
    throw new RedisUnavailableError(error);
  }
  if (closed) return;
  // The connection does not reconnect, so its end is the end of the stream.
  conn.once("end", () => res.end());
  res.writeHead(200, {
    ...sub.headers(),
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  // Redis confirms each channel with the running count; ioredis only reports the last one.
  const seen = new Set<string>();
  for (const channel of sub.channels) {
    seen.add(channel);
    res.write(`data: ${sub.pattern ? "psubscribe" : "subscribe"},${channel},${seen.size}\n\n`);
  }
  for (const event of held) res.write(event);
  held = undefined;
}
