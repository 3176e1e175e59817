// What the gateway's parts hand each other: Redis replies and outcomes, prepared commands.

/**
 * A RESP2 reply as ioredis returns it with Buffer replies and `stringNumbers`: bulk and
 * status strings are Buffers, integers are decimal strings (exact beyond 2^53), errors
 * nested in arrays are Error objects.
 */
export type Reply = Buffer | string | null | Error | Reply[];
export type Outcome = { ok: true; value: Reply } | { ok: false; error: string };

export interface PreparedCommand {
  /** Command name in upper case (ioredis applies reply transformers to lower-case names, e.g. HGETALL -> object). */
  name: string;
  args: string[];
  /** Rewrites the reply so the client sees what Upstash would answer. */
  mapReply?: (reply: Reply) => Reply;
}
