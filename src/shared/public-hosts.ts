// Whether a URL's host can be a shop's public server: a name of the public DNS, or an address
// of no special purpose. Used for the order events' endpoint URLs (./order-events.ts).
//
// Addresses are judged by ipaddr.js, whose table follows IANA's special-purpose address
// registries (IPv4 and IPv6: private, shared (100.64.0.0/10), loopback, link-local,
// benchmarking (198.18.0.0/15), documentation, reserved (240.0.0.0/4), NAT64 (64:ff9b::/96 and
// 64:ff9b:1::/48), 6to4, Teredo, discard-only, AS112, AMT, ORCHIDv2 ...); IPv6 outside 2000::/3,
// the only space allocated for global unicast, is refused too, which takes in the forms that
// carry an IPv4 address inside (mapped ::ffff:0:0/96, compatible ::/96, ::ffff:0:0:0/96).
// Names are not resolved: see docs/security.md (a Worker's fetch has no route to private
// networks; what a name resolves to at registration says nothing of what it resolves to later).
import ipaddr from "ipaddr.js";

/** IPv6's global unicast space (RFC 4291, 2.4). */
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR("2000::/3");

/**
 * Suffixes of names that only ever mean a private network: special-use names (RFC 6761
 * localhost, RFC 6762 .local, RFC 8375 home.arpa) and .internal, reserved by ICANN for private
 * use (metadata.google.internal is a cloud's metadata service).
 */
const PRIVATE_NAMES = ["localhost", "local", "home.arpa", "internal"];

/** Whether `address` (an IPv4 or IPv6 literal, no brackets) has no special purpose. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const ip = ipaddr.parse(address);
  if (ip.kind() === "ipv6" && !ip.match(GLOBAL_UNICAST_V6)) return false;
  return ip.range() === "unicast";
}

/**
 * Whether `host`, as a parsed URL names it (lower case; IPv4 in dotted decimal, IPv6 in
 * brackets; no trailing dot), can be a public server: an address of no special purpose, or a
 * name of two labels or more outside the private names. A single label is no public name: a
 * resolver completes it from its own search list, so it means a machine beside it.
 */
export function isPublicHost(host: string): boolean {
  if (host.startsWith("[") && host.endsWith("]")) return isPublicAddress(host.slice(1, -1));
  if (ipaddr.IPv4.isValidFourPartDecimal(host)) return isPublicAddress(host);
  if (!host.includes(".")) return false;
  return !PRIVATE_NAMES.some((name) => host === name || host.endsWith(`.${name}`));
}
