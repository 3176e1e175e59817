// The API document's examples (dev/generate/examples.ts) are valid: each operation's example
// parameters pass the route's own zod schemas, its request body the document's schema (what a
// client reads; a sale's window is checked against the clock by the route, which no example
// can stay inside for ever), and its answer both the document's schema and the zod schema the
// Worker's answers are checked against. Every operation has an example request, and every
// success with a body an example answer.
import { readFileSync } from "node:fs";
import path from "node:path";
import { Validator } from "@cfworker/json-schema";
import { describe, expect, it } from "vitest";
import * as z from "zod/mini";
import { ROOT } from "../../dev/lib/project.ts";
import { ROUTE_DOCS } from "../../src/routes/api.docs.ts";
import { openApiPath } from "../../src/shared/route-docs.ts";

type Json = Record<string, unknown>;
interface Operation {
  parameters?: { name: string; in: string; example?: string }[];
  requestBody?: { content: { "application/json": { schema: Json; example?: unknown } } };
  responses: Record<string, { content?: { "application/json": { schema: Json; example?: unknown } } }>;
}

const document = JSON.parse(readFileSync(path.join(ROOT, "public/openapi.json"), "utf8")) as {
  paths: Record<string, Record<string, Operation>>;
  components: Json;
};

/** What the document's own schema says of `value`: its errors, none when valid. */
function documentErrors(schema: Json, value: unknown): string[] {
  const validator = new Validator({ ...schema, components: document.components } as never, "2020-12", false);
  return validator.validate(value).errors.map((e) => `${e.instanceLocation}: ${e.error}`);
}

const zodErrors = (schema: z.ZodMiniType, value: unknown) =>
  z.safeParse(schema, value).error?.issues.map((i) => `${i.path.join(".")}: ${i.message}`) ?? [];

describe("the API document's examples", () => {
  for (const route of ROUTE_DOCS) {
    it(`${route.method.toUpperCase()} ${route.path}: its example request and answer are valid`, () => {
      const op = document.paths[openApiPath(route.path)]?.[route.method] as Operation;
      expect(op).toBeDefined();
      const examples = (where: string) =>
        Object.fromEntries((op.parameters ?? []).filter((p) => p.in === where).map((p) => [p.name, p.example]));
      if (route.params) expect(zodErrors(route.params, examples("path"))).toEqual([]);
      if (route.query) expect(zodErrors(route.query, examples("query"))).toEqual([]);
      for (const p of op.parameters ?? []) if (p.in === "path") expect(p.example, p.name).toBeDefined();

      const request = op.requestBody?.content["application/json"];
      if (request) {
        expect(request.example).toBeDefined();
        expect(documentErrors(request.schema, request.example)).toEqual([]);
      }

      for (const [status, success] of Object.entries(route.responses)) {
        const answer = op.responses[status]?.content?.["application/json"];
        if (!success.body || !answer) continue;
        expect(answer.example, `the ${status} answer`).toBeDefined();
        expect(documentErrors(answer.schema, answer.example)).toEqual([]);
        expect(zodErrors(success.body as z.ZodMiniType, answer.example)).toEqual([]);
      }
    });
  }
});
