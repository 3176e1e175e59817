// Real responses against the API's published document (public/openapi.json): every response
// that goes through checkedFetch must have a documented status for its route, and its body
// must match the documented schema, an error's code included. The document is read as served,
// so a stale file fails here as well as in the staleness test.
import { Validator } from "@cfworker/json-schema";
import document from "../../public/openapi.json";
import { ERRORS, type ErrorCode } from "../../src/shared/error-codes";
import { OUTSIDE_OPERATIONS } from "../../src/shared/route-docs";

type Operation = {
  operationId: string;
  responses: Record<string, { content?: { "application/json": { schema: object }; "text/csv"?: object } }>;
};
type Paths = Record<string, Record<string, Operation>>;

const paths = document.paths as unknown as Paths;
const templates = Object.keys(paths).map((template) => ({
  template,
  pattern: new RegExp(`^${template.replace(/\{\w+\}/g, "[^/]+")}$`),
}));

/** The operation a request hits, as the document names it. */
export function documentedOperation(method: string, pathname: string): Operation | undefined {
  const matches = templates.filter((t) => t.pattern.test(pathname));
  // A literal segment beats a parameter (/lab/sales/x/report is not /lab/{strategy}/...).
  matches.sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0));
  for (const { template } of matches) {
    const operation = paths[template]?.[method.toLowerCase()];
    if (operation) return operation;
  }
  return undefined;
}

const validators = new Map<object, Validator>();
function validatorFor(schema: object): Validator {
  let validator = validators.get(schema);
  if (!validator) {
    // The schema's $refs point into the document's components.
    validator = new Validator({ ...schema, components: document.components } as never, "2020-12", false);
    validators.set(schema, validator);
  }
  return validator;
}

/**
 * An answer the app's chain gives in front of any route (a Host the local stack refuses, a
 * fault): the document lists these codes once, in its description, for every request.
 */
async function answeredForAnyRequest(res: Response): Promise<boolean> {
  if (res.ok || !res.headers.get("Content-Type")?.startsWith("application/json")) return false;
  const code = ((await res.clone().json()) as { error?: { code?: unknown } }).error?.code;
  return OUTSIDE_OPERATIONS.includes(code as ErrorCode) && ERRORS[code as ErrorCode].status === res.status;
}

const ERROR_BODY = { $ref: "#/components/schemas/ErrorBody" };

/** What went through checkedFetch: operation id and status, for the coverage check. */
export const seen = new Set<string>();

/** Throws, naming the route, when a response is not what the document says. */
export async function expectDocumented(method: string, url: string, res: Response): Promise<void> {
  if (method === "OPTIONS") return; // CORS preflights are not operations
  const { pathname } = new URL(url);
  const operation = documentedOperation(method, pathname);
  if (!operation) throw new Error(`${method} ${pathname} is not in openapi.json`);
  let schema: object | undefined = ERROR_BODY;
  if (!(await answeredForAnyRequest(res))) {
    const documented = operation.responses[String(res.status)];
    if (!documented) throw new Error(`${method} ${pathname} answered ${res.status}, which openapi.json does not list`);
    seen.add(`${operation.operationId} ${res.status}`);
    // A CSV answer: a route that is CSV only documents no body; one that also answers JSON lists text/csv.
    if (res.headers.get("Content-Type")?.startsWith("text/csv")) {
      if (documented.content && !documented.content["text/csv"])
        throw new Error(`${method} ${pathname} answered CSV, which openapi.json does not list`);
      return;
    }
    schema = documented.content?.["application/json"].schema;
  }
  if (!schema) return;
  const body = await res.clone().json();
  const result = validatorFor(schema).validate(body);
  if (!result.valid) {
    const why = result.errors.map((e) => `${e.instanceLocation}: ${e.error}`).join("; ");
    throw new Error(`${method} ${pathname} ${res.status} does not match openapi.json: ${why}\n${JSON.stringify(body)}`);
  }
}

/** fetch, then expectDocumented. */
export async function checkedFetch(fetcher: (req: Request) => Promise<Response>, url: string, init?: RequestInit) {
  const req = new Request(url, init);
  const res = await fetcher(req);
  await expectDocumented(req.method, url, res);
  return res;
}
