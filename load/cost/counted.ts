// The counts per action for the code as it is now: measured on a local stack of its own
// (load/cost/actions.ts) the first time, then kept under node_modules/.cache, named by a hash
// of everything they depend on, so a change to the Worker, its scripts, its schema or the
// counting itself measures them again.
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { cacheFile, hashOf } from "../../dev/lib/build-cache.ts";
import { startStack } from "../../dev/stack/local-stack.ts";
import { meterWrapper } from "../runner/meter.ts";
import { type ActionCosts, type ActionOptions, countingVars, measureActions } from "./actions.ts";

/** What the counts depend on. */
const INPUTS = [
  "src",
  "lua",
  "migrations",
  "wrangler.toml",
  "package-lock.json",
  "dev/gateway",
  "dev/stack",
  "load/runner/meter.ts",
  "load/cost/actions.ts",
];

export interface CountedActions extends ActionCosts {
  /** The hash of INPUTS the counts were measured on, and when. */
  code: string;
  measuredAt: string;
}

/** Starts a counting stack (the meter around the Worker, countingVars) and measures every action. */
export async function measureOnOwnStack(
  progress?: (label: string) => void,
  options: Omit<ActionOptions, "progress"> = {},
): Promise<ActionCosts> {
  const stack = await startStack({ vars: countingVars(), wrapper: meterWrapper() });
  try {
    return await measureActions(stack, { ...options, progress });
  } finally {
    await stack.stop();
  }
}

/** The counts for this code: kept ones, or measured now (`fresh`: measured now whatever is kept). */
export async function countedActions({
  fresh = false,
  progress,
}: {
  fresh?: boolean;
  progress?: (label: string) => void;
} = {}): Promise<CountedActions> {
  const file = cacheFile(`action-counts-${hashOf(INPUTS)}.json`);
  if (!fresh && existsSync(file)) return JSON.parse(readFileSync(file, "utf8")) as CountedActions;
  return keepCounts(await measureOnOwnStack(progress));
}

/** Keeps `counts` for this code (the bench measures them on its own stack, and keeps them too). */
export function keepCounts(counts: ActionCosts): CountedActions {
  const code = hashOf(INPUTS);
  const counted = { ...counts, code, measuredAt: new Date().toISOString() };
  // Written beside and renamed into place: a reader never sees half a file.
  const file = cacheFile(`action-counts-${code}.json`);
  const scratch = `${file}.${randomUUID()}`;
  writeFileSync(scratch, JSON.stringify(counted));
  renameSync(scratch, file);
  return counted;
}
