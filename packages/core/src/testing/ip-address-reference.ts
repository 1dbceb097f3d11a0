/**
 * @module Test support: the reference normalisation of client addresses, as `keys.ip()` first did it on
 * every request: Node's `isIP` plus ipaddr.js for parsing, ipaddr.js for prefix matching and RFC 5952
 * text. Slow and obviously right; the property tests hold the integer implementation in ip-address.ts,
 * trusted-proxies.ts and ip-key.ts to it. Not part of the package entry point.
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export type ReferenceAddress = ipaddr.IPv4 | ipaddr.IPv6;

function isIpv4Mapped(parts: readonly number[]): boolean {
  return parts[0] === 0 && parts[1] === 0 && parts[2] === 0 && parts[3] === 0 && parts[4] === 0 && parts[5] === 0xffff;
}

/**
 * One address, strict (what `isIP` accepts, up to 64 characters, and an IPv6 zone id of RFC 6874's
 * unreserved characters or `:`); zone id dropped; IPv4-mapped as IPv4.
 */
export function referenceParse(text: string): ReferenceAddress | undefined {
  if (text.length === 0 || text.length > 64) return undefined;
  const zone = text.indexOf('%');
  const bare = zone === -1 ? text : text.slice(0, zone);
  if (zone !== -1 && !/^[A-Za-z0-9\-.:_~]+$/.test(text.slice(zone + 1))) return undefined;
  const family = isIP(bare);
  if (family === 4) return zone === -1 ? ipaddr.IPv4.parse(text) : undefined;
  if (family !== 6) return undefined;
  const v6 = ipaddr.IPv6.parse(bare);
  // ipaddr.js reads `::a.b.c.d` (IPv4-compatible) as `::ffff:a.b.c.d`; by value it is ::a.b.c.d.
  const compatible = /^::\d+\.\d+\.\d+\.\d+$/.test(bare) || /^(0{1,4}:){6}\d+\.\d+\.\d+\.\d+$/i.test(bare);
  if (compatible) v6.parts[5] = 0;
  return isIpv4Mapped(v6.parts) ? v6.toIPv4Address() : v6;
}

export function referenceFormat(address: ReferenceAddress): string {
  return address.kind() === 'ipv4' ? address.toString() : (address as ipaddr.IPv6).toRFC5952String();
}

export function referenceNetwork(address: ReferenceAddress, prefix: number): ReferenceAddress {
  const bytes = address.toByteArray();
  for (let i = 0; i < bytes.length; i++) {
    const bitsLeft = prefix - i * 8;
    if (bitsLeft >= 8) continue;
    bytes[i] = bitsLeft <= 0 ? 0 : (bytes[i] ?? 0) & ((0xff << (8 - bitsLeft)) & 0xff);
  }
  return ipaddr.fromByteArray(bytes);
}

export interface ReferenceKeyOptions {
  readonly ipv4Prefix: number;
  readonly ipv6Prefix: number;
  /** /96 prefixes, as CIDR text. */
  readonly nat64Prefixes: readonly string[];
}

/** The `keys.ip()` key of a client at `text` (a direct connection), or undefined when it is not an address. */
export function referenceKey(text: string, options: ReferenceKeyOptions): string | undefined {
  const address = referenceParse(text);
  if (address === undefined) return undefined;
  let v4: ReferenceAddress | undefined = address.kind() === 'ipv4' ? address : undefined;
  if (v4 === undefined) {
    for (const cidr of options.nat64Prefixes) {
      const prefix = ipaddr.IPv6.parse(cidr.slice(0, cidr.indexOf('/')));
      if ((address as ipaddr.IPv6).match(prefix, 96)) {
        v4 = ipaddr.fromByteArray(address.toByteArray().slice(12));
        break;
      }
    }
  }
  const keyed = v4 ?? address;
  const prefix = v4 === undefined ? options.ipv6Prefix : options.ipv4Prefix;
  const full = v4 === undefined ? 128 : 32;
  return prefix === full ? `ip:${referenceFormat(keyed)}` : `ip:${referenceFormat(referenceNetwork(keyed, prefix))}/${prefix}`;
}

/**
 * Whether `address` is inside the CIDR `cidr` (`a/n`; an IPv4-mapped range counts as the IPv4 range it
 * covers), by ipaddr.js `match`. The CIDR must be valid for `compileTrustedProxies`.
 */
export function referenceInRange(address: ReferenceAddress, cidr: string): boolean {
  const slash = cidr.indexOf('/');
  const text = slash === -1 ? cidr : cidr.slice(0, slash);
  const network = referenceParse(text);
  if (network === undefined) throw new Error(`fixture ${cidr} is not a CIDR`);
  const written = text.includes(':') ? 128 : 32;
  let prefix = slash === -1 ? written : Number(cidr.slice(slash + 1));
  if (written === 128 && network.kind() === 'ipv4') prefix -= 96;
  return address.kind() === network.kind() && address.match(network, prefix);
}
