// The API reference page (/docs), rendered from the OpenAPI document into plain HTML: no
// script, nothing fetched, so it passes the strictest CSP and works with JavaScript off.
// A few dozen lines instead of Swagger UI or Redoc, which would ship about a megabyte of
// script for one page of a dozen routes. Each operation shows its example (the document's:
// dev/generate/examples.ts) as a curl line and the answer; the public API comes first, the
// admin's next, the lab's internal routes apart; the contents stay in view beside them (CSS).

type Json = Record<string, unknown>;

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string);

/** Schemas as people read them: a date-time's 1,500-character pattern says no more than its format. */
function readable(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(readable);
  if (!schema || typeof schema !== "object") return schema;
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "pattern" && "format" in schema) continue;
    out[key] = readable(value);
  }
  return out;
}

const schemaLink = (ref: string) => {
  const name = ref.split("/").pop() as string;
  return `<a href="#schema-${escapeHtml(name)}">${escapeHtml(name)}</a>`;
};

/** A named schema as its link; an error body (ErrorBody narrowed to the codes its description lists) as ErrorBody's. */
const schemaBlock = (schema: unknown) => {
  const { $ref, allOf } = schema as { $ref?: string; allOf?: { $ref?: string }[] };
  const ref = $ref ?? allOf?.[0]?.$ref;
  return ref ? schemaLink(ref) : `<pre>${escapeHtml(JSON.stringify(readable(schema), null, 2))}</pre>`;
};

/** The generator's Markdown: a block of text lines, then a list of "- " lines. */
function block(text: string): { prose: string; list: string } {
  const lines = text.split("\n");
  const items = lines.filter((line) => line.startsWith("- ")).map((line) => `<li>${escapeHtml(line.slice(2))}</li>`);
  const prose = lines.filter((line) => !line.startsWith("- ")).join(" ");
  return { prose: escapeHtml(prose), list: items.length > 0 ? `<ul>${items.join("")}</ul>` : "" };
}

/** A paragraph of the document's description, with its list. */
function paragraph(text: string): string {
  const { prose, list } = block(text);
  return `<p>${prose}</p>${list}`;
}

/** A response's description: a sentence, or the list of the codes an error response may carry. */
function described(text: string): string {
  const { prose, list } = block(text);
  return list || `${prose}.`;
}

interface Operation {
  operationId: string;
  tags: string[];
  summary: string;
  description?: string;
  security?: Record<string, unknown>[];
  parameters?: { name: string; in: string; required: boolean; description?: string; schema: Json; example?: string }[];
  requestBody?: { required: boolean; content: { "application/json": { schema: Json; example?: unknown } } };
  responses: Record<
    string,
    {
      description: string;
      headers?: Record<string, unknown>;
      content?: { "application/json": { schema: Json; example?: unknown } };
    }
  >;
}

/** The admin's operations by what they are about, in this order; the document's order within each. */
const ADMIN_ORDER = ["sales", "orders", "webhooks", "deny-rules", "scheduled"];

/** The shell variable each credential is read from in the examples. */
const TOKEN_VARIABLES: Record<string, string> = { userToken: "$USER_TOKEN", adminToken: "$ADMIN_TOKEN" };

/** A shell word in single quotes. */
const quoted = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;

/**
 * The example as a curl line to paste: the path with its example parameters, the credential
 * from the shell, the headers the operation needs (and an Idempotency-Key where it takes one),
 * the example body.
 */
function curlLine(method: string, path: string, op: Operation): string {
  const parameters = op.parameters ?? [];
  const example = (name: string) => parameters.find((p) => p.name === name)?.example ?? name;
  const query = parameters
    .filter((p) => p.in === "query" && p.example !== undefined)
    .map((p) => `${p.name}=${encodeURIComponent(p.example as string)}`);
  const url = `${path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(example(name)))}${query.length > 0 ? `?${query.join("&")}` : ""}`;
  const words = [`curl -s${method === "get" ? "" : ` -X ${method.toUpperCase()}`} "$BASE${url}"`];
  const credential = Object.keys(op.security?.[0] ?? {})[0];
  if (credential) words.push(`-H "Authorization: Bearer ${TOKEN_VARIABLES[credential] ?? "$TOKEN"}"`);
  for (const header of parameters.filter((p) => p.in === "header" && p.example !== undefined)) {
    if (header.required || header.name === "Idempotency-Key") words.push(`-H ${quoted(`${header.name}: ${header.example}`)}`);
  }
  const body = op.requestBody?.content["application/json"].example;
  if (body !== undefined) words.push(`-H 'Content-Type: application/json' -d ${quoted(JSON.stringify(body))}`);
  return words.join(" \\\n  ");
}

/** The operation's example: the curl line, and the answer it gets. */
function renderExample(method: string, path: string, op: Operation): string {
  const [status, success] = Object.entries(op.responses).find(([code]) => code.startsWith("2")) ?? [];
  const answer = success?.content?.["application/json"].example;
  return [
    '<div class="example">',
    `<h4 id="example-${escapeHtml(op.operationId)}">Example</h4>`,
    `<pre><code>${escapeHtml(curlLine(method, path, op))}</code></pre>`,
    status === undefined
      ? ""
      : `<p>Answer <code>${escapeHtml(status)}</code>${answer === undefined ? "." : ":"}</p>${
          answer === undefined ? "" : `<pre><code>${escapeHtml(JSON.stringify(answer, null, 2))}</code></pre>`
        }`,
    "</div>",
  ].join("\n");
}

function renderOperation(method: string, path: string, op: Operation, internal: boolean): string {
  const auth = Object.keys(op.security?.[0] ?? {}).join(", ") || "none";
  const parts = [
    `<article id="op-${escapeHtml(op.operationId)}" class="operation">`,
    `<h3><span class="method method-${method}">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code>${
      internal ? ' <span class="badge internal">internal</span>' : ""
    }</h3>`,
    `<p>${escapeHtml(op.summary)}</p>`,
    op.description ? `<p>${escapeHtml(op.description)}</p>` : "",
    `<p><strong>Auth:</strong> ${escapeHtml(auth)}</p>`,
    renderExample(method, path, op),
  ];
  if (op.parameters?.length) {
    parts.push(
      '<h4>Parameters</h4><table><thead><tr><th scope="col">name</th><th scope="col">in</th><th scope="col">schema</th></tr></thead><tbody>',
    );
    for (const p of op.parameters) {
      const schema = escapeHtml(JSON.stringify(p.schema));
      parts.push(
        `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${escapeHtml(p.in)}</td><td>${p.description ? `${escapeHtml(p.description)} ` : ""}<code>${schema}</code></td></tr>`,
      );
    }
    parts.push("</tbody></table>");
  }
  if (op.requestBody) {
    const required = op.requestBody.required ? "required" : "optional";
    parts.push(`<h4>Request body (${required})</h4>${schemaBlock(op.requestBody.content["application/json"].schema)}`);
  }
  parts.push("<h4>Responses</h4><dl>");
  for (const [status, response] of Object.entries(op.responses)) {
    const headers = response.headers
      ? ` Headers: ${Object.keys(response.headers)
          .map((h) => `<code>${escapeHtml(h)}</code>`)
          .join(", ")}.`
      : "";
    const body = response.content ? ` ${schemaBlock(response.content["application/json"].schema)}` : "";
    parts.push(`<dt>${escapeHtml(status)}</dt><dd>${described(response.description)}${headers}${body}</dd>`);
  }
  parts.push("</dl></article>");
  return parts.filter(Boolean).join("\n");
}

export function referencePage(document: Json): string {
  const info = document.info as { title: string; version: string; description: string };
  const [intro = "", ...more] = info.description.split("\n\n");
  const tags = document.tags as { name: string; description: string }[];
  const paths = document.paths as Record<string, Record<string, Operation>>;
  const schemas = (document.components as { schemas: Record<string, Json> }).schemas;
  const operations = Object.entries(paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ path, method, op })),
  );

  // The public API first, the admin's next; the lab's routes apart, as internal.
  const parts = [
    { title: "Public API", tags: tags.filter((t) => t.name !== "admin" && t.name !== "lab") },
    { title: "Admin API", tags: tags.filter((t) => t.name === "admin") },
    { title: "Internal: the oversell lab", tags: tags.filter((t) => t.name === "lab"), internal: true },
  ];
  // An admin starts with the sales, then their orders, then the shop's endpoints and rules.
  const rank = ({ path }: { path: string }) =>
    ADMIN_ORDER.indexOf(path.includes("/orders") ? "orders" : (path.split("/")[2] ?? ""));
  const opsOf = (tag: { name: string }) =>
    operations.filter(({ op }) => op.tags.includes(tag.name)).sort((a, b) => rank(a) - rank(b));
  const nav = parts
    .map(({ title, tags: partTags }) =>
      [
        `<h2>${escapeHtml(title)}</h2>`,
        '<ul class="plain">',
        ...partTags
          .flatMap(opsOf)
          .map(
            ({ path, method, op }) =>
              `<li><a href="#op-${escapeHtml(op.operationId)}"><span class="nav-method">${method.toUpperCase()}</span> ${escapeHtml(path)}</a></li>`,
          ),
        "</ul>",
      ].join("\n"),
    )
    .join("\n");
  const sections = parts
    .map(({ title, tags: partTags, internal = false }, i) =>
      [
        `<section aria-labelledby="part-${i}" class="${internal ? "part internal-part" : "part"}">`,
        `<h2 id="part-${i}">${escapeHtml(title)}</h2>`,
        ...partTags.map((tag) => `<p>${escapeHtml(tag.description)}</p>`),
        ...partTags.flatMap(opsOf).map(({ path, method, op }) => renderOperation(method, path, op, internal)),
        "</section>",
      ].join("\n"),
    )
    .join("\n");
  const schemaList = Object.entries(schemas)
    .map(
      ([name, schema]) =>
        `<details id="schema-${escapeHtml(name)}"><summary>${escapeHtml(name)}</summary>${schemaBlock(schema)}</details>`,
    )
    .join("\n");

  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference · ${escapeHtml(info.title)}</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/assets/style.css">
</head>
<body class="docs">
<!-- Generated by npm run generate from the routes' docs (src/routes/*.docs.ts) and the error catalog: do not edit. -->
<header class="page-header">
<h1>${escapeHtml(info.title)} API <span class="muted">${escapeHtml(info.version)}</span></h1>
<p>${block(intro).prose} Machine-readable: <a href="/openapi.json">openapi.json</a> (OpenAPI 3.1).</p>
${more.map(paragraph).join("\n")}
<p>The examples are curl lines to paste: set <code>BASE</code> to the Worker's address (<code>http://127.0.0.1:8787</code> under <code>npm start</code>), <code>USER_TOKEN</code> to a buyer's token (<code>npm run token -- alice</code>) and <code>ADMIN_TOKEN</code> to the admin token. Ids in them are examples: use your own.</p>
</header>
<nav aria-label="Contents" class="contents">
${nav}
<h2><a href="#schemas">Schemas</a></h2>
</nav>
<main>
${sections}
<section aria-labelledby="schemas"><h2 id="schemas">Schemas</h2>
${schemaList}
</section>
</main>
</body>
</html>
`;
}
