// Upstash's per-database limits, refused the way Upstash refuses them, so a sale that outgrows
// its database fails on the local stack as it would in production. Both are off unless the
// gateway is started with them (--max-record-bytes, --max-request-bytes; npm start passes the
// Worker's REDIS_MAX_RECORD_BYTES and REDIS_MAX_REQUEST_BYTES).
//
// Upstash's words (its troubleshooting pages): a request larger than the limit is refused,
// "ERR max request size exceeded"; a write to an entry (string, list, set, hash...) that
// already holds more than the record limit is refused, "ERR max single record size exceeded",
// while reads and deletes of it still work. Over REST an error reply is a 400 with
// {"error": "<text>"}, as for any command Redis refuses; inside a pipeline only the refused
// command fails.
import type { Redis } from "ioredis";
import { type Batcher, RedisUnavailableError } from "./redis.js";

export const REQUEST_TOO_LARGE = "ERR max request size exceeded";
export const RECORD_TOO_LARGE = "ERR max single record size exceeded";

/** Where a command's keys are, as Redis' COMMAND reply says: first, last (negative: from the end), step. */
interface KeyPositions {
  first: number;
  last: number;
  step: number;
}

/** Scripts and functions take their keys as `<script> <numkeys> key...`; the _RO variants write nothing. */
const SCRIPT_COMMANDS = new Set(["EVAL", "EVALSHA", "FCALL"]);

/**
 * The commands that can make a record bigger: those Redis flags `denyoom` (refused when
 * Redis is out of memory: SET, HSET, SADD, ZADD, RPUSH, APPEND...), read once from the
 * server's COMMAND table. Deletes and reads are not among them.
 */
export async function growingCommands(conn: Redis): Promise<Map<string, KeyPositions>> {
  // Integers arrive as strings (the gateway's connections use stringNumbers).
  const table = (await conn.call("COMMAND")) as [string, unknown, string[], unknown, unknown, unknown][];
  const growing = new Map<string, KeyPositions>();
  for (const [name, , flags, first, last, step] of table) {
    if (flags.includes("denyoom") && Number(first) > 0) {
      growing.set(name.toUpperCase(), { first: Number(first), last: Number(last), step: Number(step) });
    }
  }
  return growing;
}

/** The keys `command` may grow (deduplicated); none for a command that only reads or deletes. */
export function grownKeys(command: string[], growing: Map<string, KeyPositions>): string[] {
  const name = (command[0] as string).toUpperCase();
  if (SCRIPT_COMMANDS.has(name)) {
    const count = Number(command[2]);
    return Number.isInteger(count) && count > 0 ? [...new Set(command.slice(3, 3 + count))] : [];
  }
  const positions = growing.get(name);
  if (!positions) return [];
  const last = positions.last < 0 ? command.length + positions.last : positions.last;
  const keys: string[] = [];
  for (let i = positions.first; i <= last && i < command.length; i += Math.max(positions.step, 1))
    keys.push(command[i] as string);
  return [...new Set(keys)];
}

/**
 * Refuses writes to records already over `maxRecordBytes`, measured with MEMORY USAGE (Redis'
 * estimate: exact for strings, sampled for big hashes, sets and lists) just before the
 * request's commands run, in one pipelined round trip for every key the request may grow.
 * Like Upstash, it checks the record as it is, not what the write would make of it: one write
 * may take a record past the limit, the next is refused.
 */
export class RecordLimit {
  /** Read on first use (Redis may be down when the gateway starts); read again if that failed. */
  private growing: Promise<Map<string, KeyPositions>> | undefined;

  constructor(
    private readonly maxRecordBytes: number,
    private readonly conn: Redis,
  ) {}

  /** For each command, RECORD_TOO_LARGE when it would write to an oversized record; else undefined. */
  async refusals(commands: string[][], batcher: Batcher): Promise<(string | undefined)[]> {
    this.growing ??= growingCommands(this.conn).catch((error: unknown) => {
      this.growing = undefined;
      throw new RedisUnavailableError(error);
    });
    const growing = await this.growing;
    const keysOf = commands.map((command) => grownKeys(command, growing));
    const keys = [...new Set(keysOf.flat())];
    if (keys.length === 0) return commands.map(() => undefined);
    const sizes = await batcher.run(keys.map((key) => ({ name: "MEMORY", args: ["USAGE", key] })));
    const over = (i: number) => {
      const size = sizes[i];
      return size?.ok === true && Number(size.value) > this.maxRecordBytes;
    };
    const oversized = new Set(keys.filter((_, i) => over(i)));
    return keysOf.map((grown) => (grown.some((key) => oversized.has(key)) ? RECORD_TOO_LARGE : undefined));
  }
}
