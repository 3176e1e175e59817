// `npm run bench` as a user runs it, every section at its smallest form (--smallest): each
// section runs on the code as it is and reads its replies, so a change to a script's reply, a
// route's answer or a helper's signature that breaks one fails here instead of in the next
// benchmark run. Figures are not checked: at this size they mean nothing. The sections run in
// five groups at once (each bench process mostly waits on its stacks, timers and queues), so
// the file takes about as long as its slowest group rather than all of them in turn.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../dev/lib/project.ts";

const run = promisify(execFile);

/** Each group of sections, by the name the bench takes and the key its JSON answers under. */
const GROUPS: Record<string, string>[] = [
  { counts: "counts" },
  { cpu: "cpu", profile: "profile", "big-keys": "bigKeys" },
  { "global-limits": "globalLimits", draw: "draw" },
  {
    "round-trips": "roundTrips",
    admission: "admission",
    strategies: "strategies",
    drain: "drain",
    throughput: "checkoutVsTrivial",
    "durable-object": "durableObject",
  },
  { scale: "scale", lifecycle: "lifecycle", "read-path": "readPath", locks: "locks", queue: "queue" },
];

describe.concurrent("npm run bench -- --smallest", () => {
  for (const group of GROUPS) {
    const sections = Object.keys(group);
    it(`runs ${sections.join(", ")} and exits 0`, { timeout: 900_000 }, async () => {
      const { stdout } = await run("npm", ["run", "--silent", "bench", "--", "--smallest", "--json", ...sections], {
        cwd: ROOT,
        maxBuffer: 256 << 20,
      });
      const summary = JSON.parse(stdout.trim().split("\n").at(-1) as string) as Record<string, unknown> & {
        conditions: { section: string; failed?: string }[];
      };
      expect(summary.conditions.filter((c) => c.failed)).toEqual([]);
      for (const [section, key] of Object.entries(group)) expect(summary[key], section).toBeDefined();
    });
  }
});
