// The API document as the usual OpenAPI linters read it: Redocly's recommended rules
// (redocly.yaml) and Spectral's spectral:oas (.spectral.yaml), on the file as served. An error
// from either fails; their warnings are matters of taste (a license, a contact, a description
// on every operation) and stay. Both run offline, without telemetry or update checks.
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../dev/lib/project.ts";

const DOCUMENT = path.join("public", "openapi.json");
const env = { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" };

/** A linter's JSON report on stdout, whatever its exit code (both exit 1 when they find an error). */
async function report(cli: string, args: string[]): Promise<unknown> {
  const run = promisify(execFile)(path.join(ROOT, "node_modules", ".bin", cli), args, { cwd: ROOT, env, maxBuffer: 64 << 20 });
  const { stdout } = await run.catch((err: { stdout?: string }) => {
    if (!err.stdout) throw err;
    return { stdout: err.stdout };
  });
  return JSON.parse(stdout);
}

describe.concurrent("the API document under the OpenAPI linters", () => {
  it("has no error by Redocly's recommended rules", async () => {
    const { problems } = (await report("redocly", ["lint", DOCUMENT, "--format", "json"])) as {
      problems: { ruleId: string; severity: "error" | "warn"; message: string; location: { pointer: string }[] }[];
    };
    const errors = problems.filter((p) => p.severity === "error");
    expect(errors.map((p) => `${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`)).toEqual([]);
  });

  it("has no error by Spectral's spectral:oas", async () => {
    const results = (await report("spectral", [
      "lint",
      DOCUMENT,
      "--ruleset",
      ".spectral.yaml",
      "--format",
      "json",
      "--quiet",
    ])) as {
      code: string;
      severity: number;
      message: string;
      path: string[];
    }[];
    // Severity 0 is an error; 1 to 3 are warnings, information and hints.
    const errors = results.filter((r) => r.severity === 0);
    expect(errors.map((r) => `${r.code} at ${r.path.join(".")}: ${r.message}`)).toEqual([]);
  });
});
