/**
 * @module Strict IP address parsing, prefix masking and canonical text for client keys. Only the textual
 * forms a socket or a proxy writes are accepted (dotted-quad IPv4 without leading zeros, RFC 4291 IPv6,
 * optional zone id); the lenient forms ipaddr.js also reads (`0x7f.1`, `2130706433`, `010.0.0.1`) are
 * refused, so an odd spelling can never become a key of its own. IPv4-mapped IPv6 (`::ffff:0:0/96`) is
 * the IPv4 address it maps, whichever way it is written.
 *
 * This runs on every request, so addresses are plain numbers (`IpAddress`: four 32-bit words) and the
 * forms sockets and proxies actually write (dotted quad, `::ffff:` + dotted quad, hexadecimal IPv6 with
 * or without `::` and zone id) are read by a hand-written scanner. Every other text goes to the reference
 * parser, Node's `isIP` plus ipaddr.js, which also decides what is not an address; the property test in
 * ip-address.property.test.ts holds the scanner to the reference on random and adversarial input.
 */
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** Longest text we parse as one address: a full IPv6 with an embedded IPv4 (45) plus a short zone id. */
export const MAX_ADDRESS_LENGTH = 64;

/**
 * An IPv4 or IPv6 address as four unsigned 32-bit words, most significant first. IPv4 sits in `w3`
 * with `w0`-`w2` zero. Immutable.
 */
export class IpAddress {
  private constructor(
    readonly family: 4 | 6,
    readonly w0: number,
    readonly w1: number,
    readonly w2: number,
    readonly w3: number,
    /** The canonical text when the parser saw it written canonically (a dotted quad), else undefined. */
    readonly text: string | undefined,
  ) {}

  static v4(address: number, text?: string): IpAddress {
    return new IpAddress(4, 0, 0, 0, address >>> 0, text);
  }

  static v6(w0: number, w1: number, w2: number, w3: number): IpAddress {
    return new IpAddress(6, w0 >>> 0, w1 >>> 0, w2 >>> 0, w3 >>> 0, undefined);
  }

  kind(): 'ipv4' | 'ipv6' {
    return this.family === 4 ? 'ipv4' : 'ipv6';
  }
}

/** Bit length of the address family: 32 or 128. */
export function bitLength(address: IpAddress): 32 | 128 {
  return address.family === 4 ? 32 : 128;
}

/** The mask of 32-bit word `word` (0-3) of a `prefix`-bit IPv6 network, as an unsigned number. */
export function v6WordMask(prefix: number, word: number): number {
  const bits = prefix - word * 32;
  return bits >= 32 ? 0xffffffff : bits <= 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
}

/** The mask of a `prefix`-bit IPv4 network, as an unsigned number. */
export function v4Mask(prefix: number): number {
  return prefix <= 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

/** The network address of `address` under a `prefix`-bit mask (host bits zeroed). */
export function networkAddress(address: IpAddress, prefix: number): IpAddress {
  if (address.family === 4) return IpAddress.v4(address.w3 & v4Mask(prefix));
  return IpAddress.v6(
    address.w0 & v6WordMask(prefix, 0),
    address.w1 & v6WordMask(prefix, 1),
    address.w2 & v6WordMask(prefix, 2),
    address.w3 & v6WordMask(prefix, 3),
  );
}

/** In ::ffff:0:0/96. (ipaddr.js `isIPv4MappedAddress()` answers the same through a slow range lookup.) */
function isIpv4Mapped(w0: number, w1: number, w2: number): boolean {
  return w0 === 0 && w1 === 0 && w2 === 0xffff;
}

// ---- Canonical text ----------------------------------------------------------------------------------

const DECIMAL = Array.from({ length: 256 }, (_, i) => String(i));
const DECIMAL_DOT = DECIMAL.map((octet) => `${octet}.`);
/** Hex without leading zeros, and two-digit hex, of 0-255. */
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16));
const HEX2 = HEX.map((hex) => hex.padStart(2, '0'));

function formatV4(a: number): string {
  // Three concatenations of table strings: a template literal of seven parts costs twice as much.
  return (
    (DECIMAL_DOT[a >>> 24] as string) +
    (DECIMAL_DOT[(a >>> 16) & 0xff] as string) +
    (DECIMAL_DOT[(a >>> 8) & 0xff] as string) +
    (DECIMAL[a & 0xff] as string)
  );
}

function hexGroup(group: number): string {
  return group < 0x100 ? (HEX[group] as string) : (HEX[group >>> 8] as string) + (HEX2[group & 0xff] as string);
}

/** Scratch for the eight 16-bit groups of the address being formatted or parsed (never held across calls). */
const groups = new Uint16Array(8);

/** RFC 5952: lower-case hex without leading zeros; the longest run (leftmost of equals) of 2+ zero groups as `::`. */
function formatV6(w0: number, w1: number, w2: number, w3: number): string {
  groups[0] = w0 >>> 16;
  groups[1] = w0;
  groups[2] = w1 >>> 16;
  groups[3] = w1;
  groups[4] = w2 >>> 16;
  groups[5] = w2;
  groups[6] = w3 >>> 16;
  groups[7] = w3;
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0, runStart = -1; i < 8; i++) {
    if (groups[i] !== 0) {
      runStart = -1;
      continue;
    }
    if (runStart === -1) runStart = i;
    if (i - runStart + 1 > bestLength) {
      bestStart = runStart;
      bestLength = i - runStart + 1;
    }
  }
  let text = '';
  for (let i = 0; i < 8; i++) {
    if (i === bestStart) {
      text += '::';
      i += bestLength - 1;
      continue;
    }
    if (i > 0 && i !== bestStart + bestLength) text += ':';
    text += hexGroup(groups[i] as number);
  }
  return text;
}

/** Canonical text: dotted quad for IPv4, RFC 5952 (lower case, `::` compressed) for IPv6, no zone id. */
export function formatIpAddress(address: IpAddress): string {
  if (address.text !== undefined) return address.text;
  return address.family === 4 ? formatV4(address.w3) : formatV6(address.w0, address.w1, address.w2, address.w3);
}

/**
 * `formatIpAddress(networkAddress(address, prefix))` without the intermediate address: the canonical
 * text of the `prefix`-bit network of `address`.
 */
export function formatNetwork(address: IpAddress, prefix: number): string {
  if (address.family === 4) return formatV4((address.w3 & v4Mask(prefix)) >>> 0);
  return formatV6(
    address.w0 & v6WordMask(prefix, 0),
    address.w1 & v6WordMask(prefix, 1),
    address.w2 & v6WordMask(prefix, 2),
    address.w3 & v6WordMask(prefix, 3),
  );
}

// ---- Parsing -----------------------------------------------------------------------------------------

const DOT = 0x2e;
const COLON = 0x3a;

/** The value of hex digit `code`, or -1. */
function hexDigit(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  const lower = code | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x57 : -1;
}

/**
 * The dotted quad `text[from, to)` as an unsigned number: four decimal octets 0-255 without leading
 * zeros. -1 for anything else.
 */
function scanDottedQuad(text: string, from: number, to: number): number {
  let value = 0;
  let i = from;
  for (let octet = 0; octet < 4; octet++) {
    if (octet > 0) {
      if (i >= to || text.charCodeAt(i) !== DOT) return -1;
      i++;
    }
    const start = i;
    let n = 0;
    while (i < to) {
      const d = text.charCodeAt(i) - 0x30;
      if (d < 0 || d > 9) break;
      n = n * 10 + d;
      i++;
    }
    const digits = i - start;
    if (digits === 0 || digits > 3 || n > 255 || (digits > 1 && text.charCodeAt(start) === 0x30)) return -1;
    value = value * 256 + n;
  }
  return i === to ? value : -1;
}

/** Zone id characters Node's `isIP` accepts after `%`: ALPHA, DIGIT, `-`, `.`, `:`. */
function isZoneChar(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x3a) || // 0-9 and ':'
    ((code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a) ||
    code === 0x2d ||
    code === DOT
  );
}

/**
 * The common IPv6 forms: hexadecimal groups with at most one `::`, an optional zone id, and, after
 * exactly `::ffff:`, a dotted quad (how a dual-stack socket reports an IPv4 peer). Undefined for any
 * other text, including valid addresses in rarer forms: the caller asks the reference parser.
 */
function scanIpv6(text: string): IpAddress | undefined {
  const n = text.length;
  let end = text.indexOf('%');
  if (end === -1) end = n;
  else {
    if (end === n - 1) return undefined;
    for (let i = end + 1; i < n; i++) if (!isZoneChar(text.charCodeAt(i))) return undefined;
  }
  // Every read below stays inside [0, end): an out-of-bounds charCodeAt would deoptimise this function.
  let count = 0;
  let gap = -1;
  let i = 0;
  if (end >= 2 && text.charCodeAt(0) === COLON && text.charCodeAt(1) === COLON) {
    gap = 0;
    i = 2;
  }
  while (i < end) {
    const start = i;
    let group = 0;
    let next = -1; // the character after the group; -1 at the end
    while (i < end) {
      const c = text.charCodeAt(i);
      const digit = hexDigit(c);
      if (digit === -1) {
        next = c;
        break;
      }
      if (i - start === 4) return undefined; // a fifth hex digit
      group = (group << 4) | digit;
      i++;
    }
    if (i === start || count === 8) return undefined;
    if (next !== -1 && next !== COLON) {
      // A dotted quad is read here only as `::ffff:a.b.c.d`; other text is not ours.
      if (next !== DOT || gap !== 0 || count !== 1 || groups[0] !== 0xffff) return undefined;
      const v4 = scanDottedQuad(text, start, end);
      return v4 === -1 ? undefined : IpAddress.v4(v4, text.slice(start, end));
    }
    groups[count++] = group;
    if (next === -1) break;
    i++; // the colon
    if (i === end) return undefined; // a single trailing colon
    if (text.charCodeAt(i) === COLON) {
      if (gap !== -1) return undefined;
      gap = count;
      i++;
    }
  }
  if (gap === -1 ? count !== 8 : count > 7) return undefined;
  if (gap !== -1) {
    // Move the groups after `::` to the end and zero the ones it stands for.
    const moved = count - gap;
    for (let k = 1; k <= moved; k++) groups[8 - k] = groups[count - k] as number;
    for (let k = gap; k < 8 - moved; k++) groups[k] = 0;
  }
  const w0 = ((groups[0] as number) << 16) | (groups[1] as number);
  const w1 = ((groups[2] as number) << 16) | (groups[3] as number);
  const w2 = ((groups[4] as number) << 16) | (groups[5] as number);
  const w3 = ((groups[6] as number) << 16) | (groups[7] as number);
  return isIpv4Mapped(w0, w1, w2 >>> 0) ? IpAddress.v4(w3) : IpAddress.v6(w0, w1, w2, w3);
}

/**
 * The common forms only (see `scanIpv6`); undefined means "not one of them", not "not an address".
 * Exported for the property test that holds it to the reference.
 */
export function parseCommonForm(text: string): IpAddress | undefined {
  const n = text.length;
  if (n === 0) return undefined;
  const first = text.charCodeAt(0);
  if (first >= 0x30 && first <= 0x39 && n <= 15) {
    const v4 = scanDottedQuad(text, 0, n);
    // Strict dotted quads are canonical: the text is the key as written.
    if (v4 !== -1) return IpAddress.v4(v4, text);
  }
  return scanIpv6(text);
}

/** The reference: Node's `isIP` decides what is an address, ipaddr.js reads it. */
function parseReference(text: string): IpAddress | undefined {
  const family = isIP(text);
  if (family === 4) {
    const [a = 0, b = 0, c = 0, d = 0] = ipaddr.IPv4.parse(text).octets;
    return IpAddress.v4(((a << 24) | (b << 16) | (c << 8) | d) >>> 0);
  }
  if (family !== 6) return undefined;
  const zone = text.indexOf('%');
  const [p0 = 0, p1 = 0, p2 = 0, p3 = 0, p4 = 0, p5 = 0, p6 = 0, p7 = 0] = ipaddr.IPv6.parse(
    zone === -1 ? text : text.slice(0, zone),
  ).parts;
  const w0 = (p0 << 16) | p1;
  const w1 = (p2 << 16) | p3;
  const w2 = (p4 << 16) | p5;
  const w3 = (p6 << 16) | p7;
  return isIpv4Mapped(w0, w1, w2 >>> 0) ? IpAddress.v4(w3) : IpAddress.v6(w0, w1, w2, w3);
}

/**
 * Parses `text` as one IPv4 or IPv6 address. Returns undefined for anything else (ports, brackets,
 * hostnames, lenient IPv4 spellings, whitespace). The zone id (`%eth0`) is dropped: it names a link on
 * this host, not a client. IPv4-mapped IPv6 comes back as the IPv4 address.
 */
export function parseIpAddress(text: string): IpAddress | undefined {
  if (text.length === 0 || text.length > MAX_ADDRESS_LENGTH) return undefined;
  return parseCommonForm(text) ?? parseReference(text);
}
