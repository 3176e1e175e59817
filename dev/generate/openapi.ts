// The OpenAPI 3.1 document of the API, assembled from the routes' docs (src/routes/*.docs.ts,
// beside each route module), the error catalog (src/shared/error-codes.ts) and the same zod
// schemas the Worker validates with and the tests check responses against. Built here, at
// build and test time, and served as a file: a generator bundled into the Worker would cost
// more than its whole size budget has left.
import { readFileSync } from "node:fs";
import path from "node:path";
import * as z from "zod/mini";
import type { $ZodType } from "zod/v4/core";
import { ROUTE_DOCS } from "../../src/routes/api.docs.ts";
import * as Bodies from "../../src/shared/api-types.ts";
import { ERROR_DOCS, ERRORS, type ErrorCode } from "../../src/shared/error-codes.ts";
import * as Lab from "../../src/shared/lab-types.ts";
import { DeliveryPage, DeliveryView, EndpointView } from "../../src/shared/order-events.ts";
import {
  type Auth,
  OUTSIDE_OPERATIONS,
  openApiPath,
  RESPONSE_HEADERS,
  type ResponseHeader,
  type RouteDoc,
  type RouteError,
} from "../../src/shared/route-docs.ts";
import { ROOT } from "../lib/project.ts";
import { type ExampleMaker, exampleMaker } from "./examples.ts";

type Json = Record<string, unknown>;

/** Every exported response schema is a named component, referenced wherever it is used. */
function componentRegistry() {
  const registry = z.registry<{ id: string }>();
  // Sorted: how a module namespace orders its exports depends on who loaded it (tsx, vitest).
  const exports = Object.entries({ ...Bodies, ...Lab, EndpointView, DeliveryView, DeliveryPage }).sort(([a], [b]) =>
    a.localeCompare(b),
  );
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

/** What a route's auth check answers (src/http/auth.ts), whichever module mounts it. */
const AUTH_ERRORS: Record<Auth, readonly RouteError[]> = {
  none: [],
  user: ["UNAUTHORIZED"],
  admin: [
    "UNAUTHORIZED",
    [
      "RATE_LIMITED",
      "too many failed admin sign-ins from this address: a global limit, counted across every isolate, that refuses even the right token until it resets",
    ],
    ["UNAVAILABLE", "ADMIN_TOKEN is not usable, or the failed sign-ins cannot be counted: their limit fails closed"],
  ],
};

/**
 * What a route may answer besides its own errors: src/app.ts's chain in front of every route,
 * and the route's auth check. The one place that knows them.
 */
function chainErrors(route: RouteDoc): RouteError[] {
  return [
    // Every request reads the settings: one that does not parse is refused by name.
    "UNAVAILABLE",
    // bodyLimit and requireJsonBodies: a body over the limit, or one that is not JSON.
    ...(route.body ? (["PAYLOAD_TOO_LARGE"] as const) : []),
    ...(route.method !== "get" ? (["UNSUPPORTED_MEDIA_TYPE"] as const) : []),
    ...(route.path.startsWith("/api/") ? [["RATE_LIMITED", "the isolate's bucket per client address"] as const] : []),
    ...(route.path.startsWith("/admin/") ? (["CROSS_ORIGIN"] as const) : []),
    ...AUTH_ERRORS[route.auth],
  ];
}

const CATALOG_ORDER = Object.keys(ERRORS) as ErrorCode[];

/** Headers an error response carries, by the codes it answers. */
function errorHeaders(codes: readonly ErrorCode[]): ResponseHeader[] {
  const headers = new Set<ResponseHeader>();
  for (const code of codes) {
    if ("retryAfterSec" in ERRORS[code] || ERROR_DOCS[code].sometimesRetryAfter) headers.add("Retry-After");
    if (code === "RATE_LIMITED")
      for (const h of ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"] as const) headers.add(h);
    if (code === "UNAUTHORIZED") headers.add("WWW-Authenticate");
    if (code === "PRECONDITION_FAILED") headers.add("ETag");
  }
  return (Object.keys(RESPONSE_HEADERS) as ResponseHeader[]).filter((h) => headers.has(h));
}

const headersObject = (headers: readonly ResponseHeader[]): Json =>
  Object.fromEntries(headers.map((h) => [h, { description: RESPONSE_HEADERS[h], schema: { type: "string" } }]));

/**
 * The route's error responses, one per status: each code with when the catalog says it is
 * sent and the route's notes, and a body whose code is one of exactly those.
 */
function errorResponses(route: RouteDoc): Record<number, Json> {
  const notes = new Map<ErrorCode, string[]>();
  for (const error of [...route.errors, ...chainErrors(route)]) {
    const [code, note] = typeof error === "string" ? [error] : error;
    notes.set(code, [...(notes.get(code) ?? []), ...(note ? [note] : [])]);
  }
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of CATALOG_ORDER.filter((c) => notes.has(c))) {
    const { status } = ERRORS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<number, Json> = {};
  for (const [status, codes] of byStatus) {
    const lines = codes.map((code) => {
      const noted = notes.get(code) ?? [];
      return `${code}: ${ERROR_DOCS[code].when}${noted.length > 0 ? ` (${noted.join("; ")})` : ""}`;
    });
    const headers = errorHeaders(codes);
    responses[status] = {
      description: lines.length === 1 ? lines[0] : lines.map((line) => `- ${line}`).join("\n"),
      ...(headers.length > 0 && { headers: headersObject(headers) }),
      content: {
        "application/json": {
          schema: {
            allOf: [
              { $ref: "#/components/schemas/ErrorBody" },
              { properties: { error: { properties: { code: { enum: codes } } } } },
            ],
          },
        },
      },
    };
  }
  return responses;
}

function operation(route: RouteDoc, registry: ReturnType<typeof componentRegistry>, examples: ExampleMaker): Json {
  const schemaOf = (schema: $ZodType): Json => {
    const id = registry.get(schema)?.id;
    return id ? { $ref: `#/components/schemas/${id}` } : embedded(z.toJSONSchema(schema) as Json);
  };
  const bodySchema = route.body && embedded(z.toJSONSchema(route.body.schema, { io: "input" }) as Json);
  const successSchemas = Object.fromEntries(
    Object.entries(route.responses).flatMap(([status, response]) => (response.body ? [[status, schemaOf(response.body)]] : [])),
  );
  const example = examples.operation(route, { body: bodySchema, responses: successSchemas });
  const parameters: Json[] = [];
  const parameter = (name: string, where: string, required: boolean, schema: Json, description?: string) =>
    parameters.push({
      name,
      in: where,
      required,
      ...(description && { description }),
      schema,
      ...(example.parameters[name] !== undefined && { example: example.parameters[name] }),
    });
  if (route.params) {
    const { properties = {} } = z.toJSONSchema(route.params, { io: "input" }) as { properties?: Record<string, Json> };
    for (const [name, schema] of Object.entries(properties)) parameter(name, "path", true, schema);
  }
  if (route.query) {
    const { properties = {}, required = [] } = z.toJSONSchema(route.query, { io: "input" }) as {
      properties?: Record<string, Json>;
      required?: string[];
    };
    for (const [name, schema] of Object.entries(properties)) parameter(name, "query", required.includes(name), schema);
  }
  for (const [name, { required, description }] of Object.entries(route.requestHeaders ?? {})) {
    parameter(name, "header", required, { type: "string" }, description);
  }
  const responses: Record<number, Json> = errorResponses(route);
  for (const [status, response] of Object.entries(route.responses)) {
    responses[Number(status)] = {
      description: response.description,
      ...(response.headers && { headers: headersObject(response.headers) }),
      ...(response.body && {
        content: {
          "application/json": { schema: successSchemas[status], example: example.responses[status] },
          ...(response.csv && { "text/csv": { schema: { type: "string", description: response.csv } } }),
        },
      }),
    };
  }
  return {
    operationId: `${route.method}${route.path.replace(/\/:?(\w)/g, (_, c: string) => c.toUpperCase()).replace(/\W/g, "")}`,
    tags: [route.tag],
    summary: route.summary,
    ...(route.description && { description: route.description }),
    // A public operation says so: no security, rather than the document's default.
    security: route.auth === "none" ? [] : [{ [SECURITY[route.auth]]: [] }],
    ...(parameters.length > 0 && { parameters }),
    ...(route.body && {
      requestBody: {
        required: route.body.required,
        content: {
          "application/json": { schema: bodySchema, ...(example.body !== undefined && { example: example.body }) },
        },
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
  const examples = exampleMaker(schemas);
  const paths: Record<string, Json> = {};
  for (const route of ROUTE_DOCS) {
    const key = openApiPath(route.path);
    paths[key] = { ...paths[key], [route.method]: operation(route, registry, examples) };
  }
  const { version } = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string };
  return {
    openapi: "3.1.0",
    info: {
      title: "edge-flash-sale",
      version,
      description: [
        'Flash-sale checkout on Cloudflare Workers. Every error is {"error": {"code", "message"}}; each operation lists the codes it may answer. Order ids are decimal strings: the public id of an order is from 2^63 to 2^64 - 1 and tells nothing of when it was made; an internal id below 2^63 that a client kept from before public ids is still accepted.',
        [
          "Besides those, any request may be answered:",
          ...OUTSIDE_OPERATIONS.map((code) => `- ${code} (${ERRORS[code].status}): ${ERROR_DOCS[code].when}`),
        ].join("\n"),
      ].join("\n\n"),
    },
    servers: [{ url: "/" }],
    // The public API first, the admin's next, the lab's internal routes last.
    tags: [
      { name: "storefront", description: "What a shop's page calls; CORS for the origins in ALLOWED_ORIGINS" },
      { name: "operations", description: "Health" },
      { name: "admin", description: "The admin token; never cross-origin" },
      {
        name: "lab",
        description:
          "Internal, not for shops: the oversell lab's experiments, for load tests and benchmarks (LAB_ENABLED=true only; keep it off in production)",
      },
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
