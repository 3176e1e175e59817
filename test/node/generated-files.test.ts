// The served documentation is generated (npm run generate): it must be what the route table
// and the schemas generate now, or the contract it publishes is stale.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { generatedFiles } from "../../dev/generate/files.ts";
import { ROOT } from "../../dev/lib/project.ts";

describe("the API's documentation files", () => {
  for (const { file, content } of generatedFiles()) {
    it(`${path.relative(ROOT, file)} is up to date (npm run generate)`, () => {
      expect(readFileSync(file, "utf8") === content, `${path.relative(ROOT, file)} is stale: run npm run generate`).toBe(true);
    });
  }

  it("documents every schema the responses use", () => {
    const document = JSON.parse(readFileSync(path.join(ROOT, "public", "openapi.json"), "utf8")) as {
      components: { schemas: Record<string, unknown> };
    };
    const refs = [...JSON.stringify(document).matchAll(/"#\/components\/schemas\/(\w+)"/g)].map((m) => m[1] as string);
    expect(refs.filter((name) => !(name in document.components.schemas))).toEqual([]);
  });
});
