// The API reference page (/docs), rendered from the OpenAPI document into plain HTML: no
// script, nothing fetched, so it passes the strictest CSP and works with JavaScript off.
// A few dozen lines instead of Swagger UI or Redoc, which would ship about a megabyte of
// script for one page of a dozen routes.

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
  parameters?: { name: string; in: string; required: boolean; description?: string; schema: Json }[];
  requestBody?: { required: boolean; content: { "application/json": { schema: Json } } };
  responses: Record<
    string,
    { description: string; headers?: Record<string, unknown>; content?: { "application/json": { schema: Json } } }
  >;
}

function renderOperation(method: string, path: string, op: Operation): string {
  const auth = Object.keys(op.security?.[0] ?? {}).join(", ") || "none";
  const parts = [
    `<article id="op-${escapeHtml(op.operationId)}" class="operation">`,
    `<h3><span class="method method-${method}">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code></h3>`,
    `<p>${escapeHtml(op.summary)}</p>`,
    op.description ? `<p>${escapeHtml(op.description)}</p>` : "",
    `<p><strong>Auth:</strong> ${escapeHtml(auth)}</p>`,
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

  const nav = operations
    .map(
      ({ path, method, op }) =>
        `<li><a href="#op-${escapeHtml(op.operationId)}">${method.toUpperCase()} ${escapeHtml(path)}</a></li>`,
    )
    .join("\n");
  const sections = tags
    .map((tag) => {
      const ops = operations.filter(({ op }) => op.tags.includes(tag.name));
      return [
        `<section aria-labelledby="tag-${tag.name}">`,
        `<h2 id="tag-${tag.name}">${escapeHtml(tag.name)}</h2>`,
        `<p>${escapeHtml(tag.description)}</p>`,
        ...ops.map(({ path, method, op }) => renderOperation(method, path, op)),
        "</section>",
      ].join("\n");
    })
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
</header>
<nav aria-label="Operations"><ul class="plain">
${nav}
</ul></nav>
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
