// HTTP plumbing: routing, auth, bodies, replies.
//
// Routing is hand-written on node:http rather than a framework: there are a handful of routes, and
// the gateway's throughput is the point of it (it is benchmarked against raw RESP), so each
// request costs one URL split and no middleware chain.
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { hostName, isLoopbackHost } from "../lib/net.ts";
import { errorBody } from "./encoding.js";

/** The most `--latency-ms` (or `/__gateway/latency?ms=`) may add to a request. */
export const MAX_LATENCY_MS = 1_000;

export type Route =
  | { kind: "command" | "pipeline" | "multi-exec" | "stats" | "stats-reset" }
  | { kind: "latency"; ms: number }
  | { kind: "subscribe"; pattern: boolean; channels: string[] };

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * Routes by the end of the path, so a base URL with any path prefix works without
 * configuration (the client appends `/pipeline`, `/multi-exec`, `/subscribe/<ch>` to its
 * base URL and sends single commands to the base URL itself). Hence any other POST path is
 * the prefix root; what is not routable is any other method, `/__gateway/...` paths that
 * do not exist and a subscribe route without channels.
 */
export function parseRoute(method: string | undefined, url: string | undefined): Route | undefined {
  const path = (url ?? "/").split("?", 1)[0] as string;
  const segments = path.split("/").filter((s) => s !== "");
  const gateway = segments.lastIndexOf("__gateway");
  if (gateway !== -1) {
    const rest = segments.slice(gateway + 1).join("/");
    if (rest === "stats" && (method === "GET" || method === "POST")) return { kind: "stats" };
    if (rest === "stats/reset" && method === "POST") return { kind: "stats-reset" };
    const ms = Number(new URLSearchParams((url ?? "").split("?")[1] ?? "").get("ms"));
    if (rest === "latency" && method === "POST" && Number.isInteger(ms) && ms >= 0 && ms <= MAX_LATENCY_MS) {
      return { kind: "latency", ms };
    }
    return undefined;
  }
  if (method !== "POST") return undefined;
  // One channel per segment, percent-decoded (the client does not encode: a "/" in a channel name splits it).
  const subscribe = segments.findIndex((s) => s === "subscribe" || s === "psubscribe");
  if (subscribe !== -1) {
    const channels = segments.slice(subscribe + 1).map(decodeSegment);
    return channels.length > 0 ? { kind: "subscribe", pattern: segments[subscribe] === "psubscribe", channels } : undefined;
  }
  const last = segments[segments.length - 1];
  if (last === "pipeline" || last === "multi-exec") return { kind: last };
  return { kind: "command" };
}

/**
 * Which Host headers the gateway answers: loopback names, and `extra` names it was started to
 * allow (--allow-host). Any other name is a page whose DNS was rebound to this machine.
 */
export function hostCheck(extra: string[]): (host: string | undefined) => boolean {
  const allowed = new Set(extra.map(hostName));
  return (host) => host !== undefined && (isLoopbackHost(host) || allowed.has(hostName(host)));
}

/** Constant-time bearer check: compares SHA-256 digests, which always have equal length. */
export function bearerAuth(token: string): (header: string | undefined) => boolean {
  const expected = createHash("sha256").update(token).digest();
  return (header) => {
    const match = header === undefined ? null : /^Bearer\s+(.+)$/i.exec(header);
    const given = createHash("sha256")
      .update(match?.[1] ?? "")
      .digest();
    return timingSafeEqual(given, expected) && match !== null;
  };
}

export class PayloadTooLargeError extends Error {}

/**
 * Reads the whole body, up to `limit` bytes. Past the limit it stops keeping bytes but
 * still drains the upload, so the client reads the 413 instead of a reset connection.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const tooLarge = () => new PayloadTooLargeError(`Request body exceeds the limit of ${limit} bytes`);
    if (Number(req.headers["content-length"] ?? 0) > limit) {
      req.resume();
      reject(tooLarge());
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      req.off("data", onData);
      req.resume();
      reject(tooLarge());
    };
    req.on("data", onData);
    req.once("end", () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
    req.once("error", reject);
  });
}

export interface Responder {
  /** Sends a JSON body with the status; a no-op once the client has gone. */
  json(res: ServerResponse, status: number, body: string): void;
  error(res: ServerResponse, status: number, message: string): void;
  /** Headers every reply carries (the changing sync token). */
  headers(): Record<string, string>;
}

/**
 * Each reply carries a fresh `upstash-sync-token`; the client echoes it back for
 * read-your-writes, which a single Redis gives anyway, so the gateway only has to change it.
 */
export function createResponder(): Responder {
  let sequence = 0;
  const headers = () => ({ "upstash-sync-token": String(++sequence) });
  const json = (res: ServerResponse, status: number, body: string) => {
    if (res.headersSent || res.destroyed) return;
    res.writeHead(status, {
      ...headers(),
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
    });
    res.end(body);
  };
  return { json, error: (res, status, message) => json(res, status, errorBody(message)), headers };
}
