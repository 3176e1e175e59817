import type { Context } from "hono";
import { type ClientAddress, clientAddressOf } from "../shared/addresses";
import { settingsOf } from "../shared/settings";

/**
 * Requests without CF-Connecting-IP: Cloudflare sets it on every request at the edge, so only a
 * Worker run off Cloudflare (wrangler dev, a test harness) sees these. They share one address
 * rather than none, so leaving the header out is no way around a per-address limit.
 */
const UNKNOWN_ADDRESS = "unknown-address";

/** The caller's address as Cloudflare reports it, parsed, IPv6 grouped by ADDRESS_PREFIX_V6 (src/shared/addresses.ts). */
export const callerAddress = (c: Context): ClientAddress | undefined =>
  clientAddressOf(c.req.header("CF-Connecting-IP"), settingsOf(c.env).ADDRESS_PREFIX_V6);

/**
 * What every per-address count is kept under: the IPv4 address, or the IPv6 caller's prefix;
 * the one shared stand-in when there is no address (or, off Cloudflare only, no valid one).
 */
export const clientAddress = (c: Context): string => callerAddress(c)?.key ?? UNKNOWN_ADDRESS;
