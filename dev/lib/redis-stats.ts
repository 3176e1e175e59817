// What Redis itself counted (INFO commandstats): how many commands a piece of work cost.
import type { Redis } from "ioredis";

export interface CommandStat {
  calls: number;
  failed: number;
}

/** Calls and failed calls per command so far, by lower-case command name. */
export async function commandStats(redis: Redis): Promise<Map<string, CommandStat>> {
  const info = await redis.info("commandstats");
  return new Map(
    [...info.matchAll(/^cmdstat_([\w|]+):calls=(\d+).*?failed_calls=(\d+)/gm)].map((m) => [
      m[1] as string,
      { calls: Number(m[2]), failed: Number(m[3]) },
    ]),
  );
}

/** One command's figures (zero when it never ran). */
export async function commandStat(redis: Redis, command: string): Promise<CommandStat> {
  return (await commandStats(redis)).get(command) ?? { calls: 0, failed: 0 };
}

/** Every command Redis has run, except the INFO calls that read the figures. */
export async function totalCommands(redis: Redis): Promise<number> {
  let total = 0;
  for (const [command, { calls }] of await commandStats(redis)) if (command !== "info") total += calls;
  return total;
}
