// Request bodies and the commands the gateway will not run as asked.

export class BadRequestError extends Error {}

const COMMAND_SHAPE = "a command must be a non-empty JSON array of strings, numbers or booleans";

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString("utf8"));
  } catch (error) {
    throw new BadRequestError(`Request body is not valid JSON: ${(error as Error).message}`);
  }
}

/** JSON scalars become their text (UTF-8 on the wire), as Upstash does. */
function toCommand(value: unknown): string[] | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined;
  const args: string[] = [];
  for (const arg of value) {
    if (typeof arg !== "string" && typeof arg !== "number" && typeof arg !== "boolean") return undefined;
    args.push(String(arg));
  }
  return args;
}

/** Body of `POST /`: `["CMD", arg, ...]`. */
export function parseCommand(body: Buffer): string[] {
  const command = toCommand(parseJson(body));
  if (!command) throw new BadRequestError(`Invalid command: ${COMMAND_SHAPE}`);
  return command;
}

/** Body of `/pipeline` and `/multi-exec`: `[[...], ...]`, validated whole before anything runs. */
export function parseCommandList(body: Buffer): string[][] {
  const value = parseJson(body);
  if (!Array.isArray(value) || value.length === 0) {
    throw new BadRequestError("Invalid pipeline: the body must be a non-empty JSON array of commands");
  }
  return value.map((item, i) => {
    const command = toCommand(item);
    if (!command) throw new BadRequestError(`Invalid command at index ${i}: ${COMMAND_SHAPE}`);
    return command;
  });
}

// Commands that would change the state of a connection other requests share (or of a
// pooled one after it is returned), or switch it into a mode that breaks request/reply.
const REFUSED: Record<string, string> = {
  SUBSCRIBE: "use the /subscribe/<channel> route",
  PSUBSCRIBE: "use the /psubscribe/<pattern> route",
  SSUBSCRIBE: "use the /subscribe/<channel> route",
  UNSUBSCRIBE: "abort the /subscribe request instead",
  PUNSUBSCRIBE: "abort the /psubscribe request instead",
  SUNSUBSCRIBE: "abort the /subscribe request instead",
  MONITOR: "it takes over the connection",
  MULTI: "use the /multi-exec route",
  EXEC: "use the /multi-exec route",
  DISCARD: "use the /multi-exec route",
  WATCH: "connections are shared between requests",
  UNWATCH: "connections are shared between requests",
  SELECT: "connections are shared between requests; use database 0",
  HELLO: "the gateway speaks RESP2 to Redis",
  AUTH: "the gateway authenticates to Redis itself",
  RESET: "connections are shared between requests",
  QUIT: "connections are shared between requests",
  SYNC: "it takes over the connection",
  PSYNC: "it takes over the connection",
};

// Server administration that no client of the gateway sends (the Worker, @upstash/redis,
// @upstash/ratelimit): refused unless the gateway runs with --allow-admin-commands, so whoever
// reaches it without being one of them cannot reconfigure, replicate, wipe, dump or stop Redis.
const ADMIN = new Set([
  "ACL",
  "BGREWRITEAOF",
  "BGSAVE",
  "CLUSTER",
  "CONFIG",
  "DEBUG",
  "FAILOVER",
  "FLUSHALL",
  "FLUSHDB",
  "FUNCTION",
  "KEYS",
  "MIGRATE",
  "MODULE",
  "REPLICAOF",
  "SAVE",
  "SHUTDOWN",
  "SLAVEOF",
  "SWAPDB",
]);
const ADMIN_SUBCOMMANDS: Record<string, Set<string>> = {
  CLIENT: new Set(["KILL", "PAUSE", "UNPAUSE", "NO-EVICT", "NO-TOUCH"]),
  SCRIPT: new Set(["FLUSH", "KILL"]),
};

function isAdmin(name: string, subcommand: string | undefined): boolean {
  return ADMIN.has(name) || (subcommand !== undefined && ADMIN_SUBCOMMANDS[name]?.has(subcommand.toUpperCase()) === true);
}

/** The error a refused command answers with, or undefined when it may run. */
export function refusal(command: string[], { allowAdminCommands = false } = {}): string | undefined {
  const name = (command[0] as string).toUpperCase();
  if (!allowAdminCommands && isAdmin(name, command[1])) {
    return `ERR '${command[0]}' is an administrative command; the gateway runs it only when started with --allow-admin-commands`;
  }
  const reason =
    REFUSED[name] ??
    (name === "CLIENT" && command[1]?.toUpperCase() === "REPLY" ? "connections are shared between requests" : undefined);
  return reason === undefined ? undefined : `ERR '${command[0]}' is not supported by the gateway: ${reason}`;
}

const BLOCKING = new Set(["BLPOP", "BRPOP", "BRPOPLPUSH", "BLMOVE", "BLMPOP", "BZPOPMIN", "BZPOPMAX", "BZMPOP", "WAIT"]);

/** True for commands that can block their connection (XREAD/XREADGROUP only with BLOCK). */
export function isBlocking(command: string[]): boolean {
  const name = (command[0] as string).toUpperCase();
  if (BLOCKING.has(name)) return true;
  if (name !== "XREAD" && name !== "XREADGROUP") return false;
  for (let i = 1; i < command.length; i++) {
    const arg = (command[i] as string).toUpperCase();
    if (arg === "STREAMS") return false;
    if (arg === "BLOCK") return true;
  }
  return false;
}
