// A local stand-in for Cloudflare Turnstile's siteverify, for the local stack (`npm start`)
// and the Worker tests, which cannot reach Cloudflare. It answers as Cloudflare documents for
// its published test secrets: one always passes, one always fails, one answers that the token
// was already spent; STAND_IN_SECRET passes like the first; any other secret is refused as invalid.
//
// What Cloudflare cannot say for a test secret is the widget's action: the stand-in reads it
// from the token's tail, `<token>:<action>` (tests and tooling mint such tokens with
// `standInToken`). Cloudflare's dummy token (what its test site keys give a page) carries no
// action, so it passes with an empty one, which a sale's action check refuses. Cloudflare
// answers the host name the widget was solved on, which a stand-in cannot know: it answers
// STAND_IN_HOSTNAME, the local stack's, which a Worker serving loopback hosts only accepts.
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { STAND_IN_HOSTNAME, STAND_IN_SECRET, TEST_SECRETS } from "./test-keys.ts";

export interface SiteverifyStandIn {
  /** Where the Worker's TURNSTILE_VERIFY_URL points. */
  url: string;
  stop(): Promise<void>;
}

/** siteverify takes a form or JSON. */
async function fieldsOf(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  if ((req.headers["content-type"] ?? "").includes("application/json")) {
    try {
      const parsed: unknown = JSON.parse(text);
      return typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : {};
    } catch {
      return {};
    }
  }
  return Object.fromEntries(new URLSearchParams(text));
}

const failure = (...codes: string[]) => ({ success: false, "error-codes": codes });

/** Cloudflare's answer to `fields`, for the test secrets. */
export function answerFor(fields: Record<string, unknown>, now = new Date()): Record<string, unknown> {
  const { secret, response } = fields;
  if (typeof secret !== "string" || secret === "") return failure("missing-input-secret");
  if (typeof response !== "string" || response === "") return failure("missing-input-response");
  if (response.length > 2_048) return failure("invalid-input-response");
  switch (secret) {
    case TEST_SECRETS.passes:
    case STAND_IN_SECRET: {
      const tail = response.lastIndexOf(":");
      return {
        success: true,
        "error-codes": [],
        challenge_ts: now.toISOString(),
        hostname: STAND_IN_HOSTNAME,
        action: tail < 0 ? "" : response.slice(tail + 1),
        cdata: "",
        metadata: { result_with_testing_key: true },
      };
    }
    case TEST_SECRETS.fails:
      return failure("invalid-input-response");
    case TEST_SECRETS.spent:
      return failure("timeout-or-duplicate");
    default:
      return failure("invalid-input-secret");
  }
}

/** Starts the stand-in on a free loopback port (or `port`). */
export async function startSiteverify(port = 0): Promise<SiteverifyStandIn> {
  const server = createServer((req, res) => {
    if (req.method !== "POST" || req.url?.split("?")[0] !== "/turnstile/v0/siteverify") {
      res.writeHead(404).end();
      return;
    }
    fieldsOf(req).then(
      (fields) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answerFor(fields))),
      () => res.writeHead(400).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const { port: bound } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${bound}/turnstile/v0/siteverify`,
    stop: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        // The Worker's runtime keeps connections alive: close them, or close() waits on them.
        server.closeAllConnections();
      }),
  };
}
