// `npm run bench` as a user runs it, every section at its smallest form (--smallest): each
// section runs on the code as it is and reads its replies, so a change to a script's reply, a
// route's answer or a helper's signature that breaks one fails here instead of in the next
// benchmark run. Figures are not checked: at this size they mean nothing.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { ROOT } from "../../dev/lib/project.ts";

const run = promisify(execFile);

/** Each section as the bench's JSON names it. */
const SECTIONS = [
  "counts",
  "roundTrips",
  "admission",
  "strategies",
  "durableObject",
  "drain",
  "checkoutVsTrivial",
  "cpu",
  "profile",
  "scale",
  "lifecycle",
  "queue",
  "readPath",
  "locks",
  "bigKeys",
  "globalLimits",
  "draw",
] as const;

it("runs every section of npm run bench at its smallest form and exits 0", { timeout: 1_800_000 }, async () => {
  const { stdout } = await run("npm", ["run", "--silent", "bench", "--", "--smallest", "--json"], {
    cwd: ROOT,
    maxBuffer: 256 << 20,
  });
  const summary = JSON.parse(stdout.trim().split("\n").at(-1) as string) as Record<string, unknown> & {
    conditions: { section: string; failed?: string }[];
  };
  expect(summary.conditions.filter((c) => c.failed)).toEqual([]);
  for (const section of SECTIONS) expect(summary[section], section).toBeDefined();
});
