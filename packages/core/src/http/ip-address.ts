/**
 * @module Strict IP address parsing and prefix masking for client keys. Only the textual forms a socket
 * or a proxy writes are accepted (dotted-quad IPv4 without leading zeros, RFC 4291 IPv6, optional zone
 * id); the lenient forms ipaddr.js also reads (`0x7f.1`, `2130706433`, `010.0.0.1`) are refused, so an
 * odd spelling can never become a key of its own. IPv4-mapped IPv6 (`::ffff:0:0/96`) is the IPv4 address
 * it maps, whichever way it is written.
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export type IpAddress = ipaddr.IPv4 | ipaddr.IPv6;

/** Longest text we parse as one address: a full IPv6 with an embedded IPv4 (45) plus a short zone id. */
export const MAX_ADDRESS_LENGTH = 64;

/**
 * Parses `text` as one IPv4 or IPv6 address. Returns undefined for anything else (ports, brackets,
 * hostnames, lenient IPv4 spellings, whitespace). The zone id (`%eth0`) is dropped: it names a link on
 * this host, not a client. IPv4-mapped IPv6 comes back as the IPv4 address.
 */
export function parseIpAddress(text: string): IpAddress | undefined {
  if (text.length === 0 || text.length > MAX_ADDRESS_LENGTH) return undefined;
  const family = isIP(text);
  if (family === 4) return ipaddr.IPv4.parse(text);
  if (family !== 6) return undefined;
  const zone = text.indexOf('%');
  const v6 = ipaddr.IPv6.parse(zone === -1 ? text : text.slice(0, zone));
  return isIpv4Mapped(v6.parts) ? v6.toIPv4Address() : v6;
}

/** In ::ffff:0:0/96. (ipaddr.js `isIPv4MappedAddress()` answers the same through a slow range lookup.) */
function isIpv4Mapped(parts: readonly number[]): boolean {
  return parts[0] === 0 && parts[1] === 0 && parts[2] === 0 && parts[3] === 0 && parts[4] === 0 && parts[5] === 0xffff;
}

/** Bit length of the address family: 32 or 128. */
export function bitLength(address: IpAddress): 32 | 128 {
  return address.kind() === 'ipv4' ? 32 : 128;
}

/** The network address of `address` under a `prefix`-bit mask (host bits zeroed). */
export function networkAddress(address: IpAddress, prefix: number): IpAddress {
  const bytes = address.toByteArray();
  for (let i = 0; i < bytes.length; i++) {
    const bitsLeft = prefix - i * 8;
    if (bitsLeft >= 8) continue;
    bytes[i] = bitsLeft <= 0 ? 0 : (bytes[i] ?? 0) & ((0xff << (8 - bitsLeft)) & 0xff);
  }
  return ipaddr.fromByteArray(bytes);
}

/** Canonical text: dotted quad for IPv4, RFC 5952 (lower case, `::` compressed) for IPv6, no zone id. */
export function formatIpAddress(address: IpAddress): string {
  return address.kind() === 'ipv4' ? address.toString() : (address as ipaddr.IPv6).toRFC5952String();
}
