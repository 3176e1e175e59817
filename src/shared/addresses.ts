// Client addresses as people hold them. An IPv4 address is usually one household, office or
// carrier NAT; an IPv6 host is handed a whole prefix (a /64 as a rule, often a /56 or /48) and
// picks any address inside it for free. So every per-address control (the limits, one account
// per address, `ip` deny rules, the admin sign-in limit) counts an IPv6 caller by its prefix of
// ADDRESS_PREFIX_V6 bits, and an IPv4 one by its address. Parsing: ipaddr.js; the masking and
// the rule index are the few lines it does not offer.
import ipaddr from "ipaddr.js";

/** A parsed client address; an IPv4-mapped IPv6 address (::ffff:192.0.2.1) is the IPv4 address it carries. */
export interface ClientAddress {
  /** The address itself, written the usual way ("192.0.2.1", "2001:db8::7"). */
  ip: string;
  family: 4 | 6;
  /** 4 or 16 bytes. */
  bytes: readonly number[];
  /** The prefix length IPv6 callers are grouped by (ADDRESS_PREFIX_V6). */
  prefixV6: number;
  /** What per-address counts are kept under: "192.0.2.1", or the IPv6 prefix "2001:db8:0:1::/64". */
  key: string;
}

/** An address or CIDR range, as an `ip` deny rule holds it. */
export interface AddressRange {
  family: 4 | 6;
  bytes: readonly number[];
  bits: number;
}

const parsed = (address: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 =>
  address.kind() === "ipv6" && (address as ipaddr.IPv6).isIPv4MappedAddress()
    ? (address as ipaddr.IPv6).toIPv4Address()
    : address;

const familyOf = (address: ipaddr.IPv4 | ipaddr.IPv6): 4 | 6 => (address.kind() === "ipv4" ? 4 : 6);

/** The first `bits` of `bytes`, the rest zero. */
function masked(bytes: readonly number[], bits: number): number[] {
  return bytes.map((byte, i) => {
    const kept = Math.min(8, Math.max(0, bits - 8 * i));
    return byte & (0xff << (8 - kept)) & 0xff;
  });
}

/**
 * The caller's address (CF-Connecting-IP) as the per-address controls count it, or undefined
 * when there is none or it does not parse (only a Worker run off Cloudflare sees either).
 */
export function clientAddressOf(text: string | undefined, prefixV6: number): ClientAddress | undefined {
  if (text === undefined || !ipaddr.isValid(text.trim())) return undefined;
  const address = parsed(ipaddr.parse(text.trim()));
  const family = familyOf(address);
  const bytes = address.toByteArray();
  const ip = address.toString();
  if (family === 4) return { ip, family, bytes, prefixV6, key: ip };
  const network = ipaddr.fromByteArray(masked(bytes, prefixV6));
  return { ip, family, bytes, prefixV6, key: `${network.toString()}/${prefixV6}` };
}

/** An address ("203.0.113.7") or CIDR range ("2001:db8::/48"), or undefined when it is neither. */
export function addressRangeOf(text: string): AddressRange | undefined {
  const value = text.trim();
  if (ipaddr.isValidCIDR(value)) {
    const [address, bits] = ipaddr.parseCIDR(value);
    const family = familyOf(address);
    return { family, bytes: masked(address.toByteArray(), bits), bits };
  }
  if (!ipaddr.isValid(value)) return undefined;
  const address = parsed(ipaddr.parse(value));
  const family = familyOf(address);
  return { family, bytes: address.toByteArray(), bits: family === 4 ? 32 : 128 };
}

/** The range written the one way it is kept: "203.0.113.7", "203.0.113.0/24", "2001:db8::/48". */
export function rangeText(range: AddressRange): string {
  const address = ipaddr.fromByteArray([...range.bytes]).toString();
  return range.bits === range.bytes.length * 8 ? address : `${address}/${range.bits}`;
}

/** A lookup key for the first `bits` of an address of `family`. */
const prefixKey = (family: 4 | 6, bytes: readonly number[], bits: number): string =>
  `${family}/${bits}/${masked(bytes, bits)
    .slice(0, Math.ceil(bits / 8))
    .join(".")}`;

/**
 * Ranges, each with a value (a deny rule's expiry), matched against a caller in a few map
 * lookups: one per distinct prefix length, never one per range, so ten thousand rules cost a
 * checkout what three do. An IPv6 range longer than the caller's group (a single address, a
 * /120) covers the whole group: its holder could move anywhere inside it for free.
 */
export class AddressRanges<T> {
  /** Per IPv6 group length (ADDRESS_PREFIX_V6: one in practice), by prefix length, by prefixKey. */
  private readonly indexes = new Map<number, Map<number, Map<string, T>>>();

  /** `merge` keeps one value where two ranges meet in one key. */
  constructor(
    private readonly ranges: readonly { range: AddressRange; value: T }[],
    private readonly merge: (a: T, b: T) => T,
  ) {}

  /** The value of every range that covers the caller, merged; undefined when none does. */
  match(caller: ClientAddress): T | undefined {
    let found: T | undefined;
    for (const [bits, keys] of this.index(caller.prefixV6)) {
      if (bits > caller.bytes.length * 8) continue;
      const value = keys.get(prefixKey(caller.family, caller.bytes, bits));
      if (value !== undefined) found = found === undefined ? value : this.merge(found, value);
    }
    return found;
  }

  private index(groupBitsV6: number): Map<number, Map<string, T>> {
    let index = this.indexes.get(groupBitsV6);
    if (!index) {
      index = new Map();
      for (const { range, value } of this.ranges) {
        const bits = range.family === 6 ? Math.min(range.bits, groupBitsV6) : range.bits;
        const keys = index.get(bits) ?? new Map<string, T>();
        index.set(bits, keys);
        const key = prefixKey(range.family, range.bytes, bits);
        const known = keys.get(key);
        keys.set(key, known === undefined ? value : this.merge(known, value));
      }
      this.indexes.set(groupBitsV6, index);
    }
    return index;
  }
}
