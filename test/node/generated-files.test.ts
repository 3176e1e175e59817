// The served documentation is generated (npm run generate): it must be what the routes' docs,
// the error catalog and the schemas generate now, or the contract it publishes is stale.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { generatedFiles } from "../../dev/generate/files.ts";
import { ROOT } from "../../dev/lib/project.ts";
import { ERRORS, type ErrorCode } from "../../src/shared/error-codes.ts";
import { OUTSIDE_OPERATIONS } from "../../src/shared/route-docs.ts";

type Document = {
  info: { description: string };
  paths: Record<string, Record<string, { responses: Record<string, { content?: { "application/json": { schema: unknown } } }> }>>;
  components: { schemas: Record<string, unknown> };
};
const readDocument = () => JSON.parse(readFileSync(path.join(ROOT, "public", "openapi.json"), "utf8")) as Document;

describe("the API's documentation files", () => {
  for (const { file, content } of generatedFiles()) {
    it(`${path.relative(ROOT, file)} is up to date (npm run generate)`, () => {
      expect(readFileSync(file, "utf8") === content, `${path.relative(ROOT, file)} is stale: run npm run generate`).toBe(true);
    });
  }

  it("documents every schema the responses use", () => {
    const document = readDocument();
    const refs = [...JSON.stringify(document).matchAll(/"#\/components\/schemas\/(\w+)"/g)].map((m) => m[1] as string);
    expect(refs.filter((name) => !(name in document.components.schemas))).toEqual([]);
  });

  it("documents every error code: on the operations that answer it, or for any request in its description", () => {
    const document = readDocument();
    const onOperations = new Set(
      Object.values(document.paths)
        .flatMap((methods) => Object.values(methods))
        .flatMap((operation) => Object.values(operation.responses))
        .flatMap((response) => {
          const schema = response.content?.["application/json"].schema as
            | { allOf?: [unknown, { properties: { error: { properties: { code: { enum: ErrorCode[] } } } } }] }
            | undefined;
          return schema?.allOf?.[1].properties.error.properties.code.enum ?? [];
        }),
    );
    const undocumented = (Object.keys(ERRORS) as ErrorCode[]).filter(
      (code) => !onOperations.has(code) && !OUTSIDE_OPERATIONS.includes(code),
    );
    expect(undocumented).toEqual([]);
    expect(OUTSIDE_OPERATIONS.filter((code) => !document.info.description.includes(code))).toEqual([]);
  });
});
