import type { Context } from "hono";

/**
 * Requests without CF-Connecting-IP: Cloudflare sets it on every request at the edge, so only a
 * Worker run off Cloudflare (wrangler dev, a test harness) sees these. They share one address
 * rather than none, so leaving the header out is no way around a per-address limit.
 */
const UNKNOWN_ADDRESS = "unknown-address";

/** The caller's address as Cloudflare reports it, or the one shared stand-in when absent. */
export const clientAddress = (c: Context): string => c.req.header("CF-Connecting-IP") ?? UNKNOWN_ADDRESS;
