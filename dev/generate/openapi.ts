// The OpenAPI 3.1 document of the API, generated from the route table and the same zod
// schemas the Worker validates with and the tests check responses against. Built here, at
// build and test time, and served as a file: a generator bundled into the Worker would cost
// more than its whole size budget has left.
import { readFileSync } from "node:fs";
import path from "node:path";
import * as z from "zod/mini";
import type { $ZodType } from "zod/v4/core";
import { API_ROUTES, type ApiRoute, type Auth, openApiPath, RESPONSE_HEADERS } from "../../src/shared/api-routes.ts";
import * as Bodies from "../../src/shared/api-types.ts";
import * as Lab from "../../src/shared/lab-types.ts";
import { ROOT } from "../lib/project.ts";

type Json = Record<string, unknown>;

/** Every exported response schema is a named component, referenced wherever it is used. */
function componentRegistry() {
  const registry = z.registry<{ id: string }>();
  // Sorted: how a module namespace orders its exports depends on who loaded it (tsx, vitest).
  const exports = Object.entries({ ...Bodies, ...Lab }).sort(([a], [b]) => a.localeCompare(b));
  for (const [name, value] of exports) {
    if (value && typeof value === "object" && "_zod" in value) registry.add(value as $ZodType, { id: name });
  }
  return registry;
}

/** JSON Schema as OpenAPI 3.1 embeds it: no `$schema` or `$id` of its own. */
function embedded(schema: Json): Json {
  const { $schema: _schema, $id: _id, ...rest } = schema;
  return rest;
}

const SECURITY: Record<Exclude<Auth, "none">, string> = { user: "userToken", admin: "adminToken" };

function operation(route: ApiRoute, registry: ReturnType<typeof componentRegistry>): Json {
  const schemaOf = (schema: $ZodType): Json => {
    const id = registry.get(schema)?.id;
    return id ? { $ref: `#/components/schemas/${id}` } : embedded(z.toJSONSchema(schema) as Json);
  };
  const parameters: Json[] = [];
  if (route.params) {
    const { properties = {} } = z.toJSONSchema(route.params, { io: "input" }) as { properties?: Record<string, Json> };
    for (const [name, schema] of Object.entries(properties)) parameters.push({ name, in: "path", required: true, schema });
  }
  if (route.query) {
    const { properties = {}, required = [] } = z.toJSONSchema(route.query, { io: "input" }) as {
      properties?: Record<string, Json>;
      required?: string[];
    };
    for (const [name, schema] of Object.entries(properties)) {
      parameters.push({ name, in: "query", required: required.includes(name), schema });
    }
  }
  for (const [name, { required, description }] of Object.entries(route.requestHeaders ?? {})) {
    parameters.push({ name, in: "header", required, description, schema: { type: "string" } });
  }
  const responses: Json = {};
  for (const [status, response] of Object.entries(route.responses)) {
    responses[status] = {
      description: response.description,
      ...(response.headers && {
        headers: Object.fromEntries(
          response.headers.map((h) => [h, { description: RESPONSE_HEADERS[h], schema: { type: "string" } }]),
        ),
      }),
      ...(response.body && { content: { "application/json": { schema: schemaOf(response.body) } } }),
    };
  }
  return {
    operationId: `${route.method}${route.path.replace(/\/:?(\w)/g, (_, c: string) => c.toUpperCase()).replace(/\W/g, "")}`,
    tags: [route.tag],
    summary: route.summary,
    ...(route.description && { description: route.description }),
    ...(route.auth !== "none" && { security: [{ [SECURITY[route.auth]]: [] }] }),
    ...(parameters.length > 0 && { parameters }),
    ...(route.body && {
      requestBody: {
        required: route.body.required,
        content: { "application/json": { schema: embedded(z.toJSONSchema(route.body.schema, { io: "input" }) as Json) } },
      },
    }),
    responses,
  };
}

export function openApiDocument(): Json {
  const registry = componentRegistry();
  const { schemas } = z.toJSONSchema(registry, { uri: (id) => `#/components/schemas/${id}` }) as {
    schemas: Record<string, Json>;
  };
  const paths: Record<string, Json> = {};
  for (const route of API_ROUTES) {
    const key = openApiPath(route.path);
    paths[key] = { ...paths[key], [route.method]: operation(route, registry) };
  }
  const { version } = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string };
  return {
    openapi: "3.1.0",
    info: {
      title: "edge-flash-sale",
      version,
      description:
        'Flash-sale checkout on Cloudflare Workers. Every error is {"error": {"code", "message"}}. Order ids are 64-bit integers sent as decimal strings.',
    },
    servers: [{ url: "/" }],
    tags: [
      { name: "storefront", description: "What a shop's page calls; CORS for the origins in ALLOWED_ORIGINS" },
      { name: "admin", description: "The admin token; never cross-origin" },
      { name: "lab", description: "The oversell lab (LAB_ENABLED=true only)" },
      { name: "operations", description: "Health" },
    ],
    paths,
    components: {
      schemas: Object.fromEntries(Object.entries(schemas).map(([id, schema]) => [id, embedded(schema)])),
      securitySchemes: {
        userToken: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT",
          description: "HS256, user id in `sub`, `exp` required",
        },
        adminToken: { type: "http", scheme: "bearer", description: "ADMIN_TOKEN" },
      },
    },
  };
}
