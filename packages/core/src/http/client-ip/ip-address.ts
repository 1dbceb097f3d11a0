/**
 * @module Strict IP address parsing, prefix masking and canonical text for client keys. Only the textual
 * forms a socket or a proxy writes are accepted (dotted-quad IPv4 without leading zeros, RFC 4291 IPv6,
 * optional zone id); the lenient forms ipaddr.js also reads (`0x7f.1`, `2130706433`, `010.0.0.1`) are
 * refused, so an odd spelling can never become a key of its own. IPv4-mapped IPv6 (`::ffff:0:0/96`) is
 * the IPv4 address it maps, whichever way it is written.
 *
 * This runs on every request, so addresses are plain numbers (`IpAddress`: eight 16-bit groups) and the
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
 * An IPv4 or IPv6 address as its eight 16-bit groups, most significant first; IPv4 sits in `g6` (high
 * half) and `g7` with the other groups zero. Sixteen bits keep every field a small integer, which V8
 * stores in the object itself (32-bit words would each be a separate heap number). Immutable.
 */
export class IpAddress {
  private constructor(
    readonly family: 4 | 6,
    readonly g0: number,
    readonly g1: number,
    readonly g2: number,
    readonly g3: number,
    readonly g4: number,
    readonly g5: number,
    readonly g6: number,
    readonly g7: number,
    /** The canonical text when the parser saw it written canonically (a dotted quad), else undefined. */
    readonly text: string | undefined,
  ) {}

  /** The IPv4 address with 16-bit halves `hi` and `lo` (`a.b.c.d` is `a << 8 | b`, `c << 8 | d`). */
  static v4(hi: number, lo: number, text?: string): IpAddress {
    return new IpAddress(4, 0, 0, 0, 0, 0, 0, hi, lo, text);
  }

  /** The IPv6 address of eight 16-bit groups (which are not IPv4-mapped: callers map them first). */
  static v6(g0: number, g1: number, g2: number, g3: number, g4: number, g5: number, g6: number, g7: number): IpAddress {
    return new IpAddress(6, g0, g1, g2, g3, g4, g5, g6, g7, undefined);
  }

  kind(): 'ipv4' | 'ipv6' {
    return this.family === 4 ? 'ipv4' : 'ipv6';
  }
}

/** 32-bit word `k` (0-3) of `address` as a signed integer; an IPv4 address is word 3. */
export function addressWord(address: IpAddress, k: number): number {
  switch (k) {
    case 0:
      return (address.g0 << 16) | address.g1;
    case 1:
      return (address.g2 << 16) | address.g3;
    case 2:
      return (address.g4 << 16) | address.g5;
    default:
      return (address.g6 << 16) | address.g7;
  }
}

/** The mask of 32-bit word `k` (0-3) of a `prefix`-bit network of 128 bits, as a signed integer. */
export function wordMask(prefix: number, k: number): number {
  const bits = prefix - k * 32;
  return bits >= 32 ? -1 : bits <= 0 ? 0 : -1 << (32 - bits);
}

/** `GROUP_MASKS[prefix * 8 + i]`: the mask of group `i` (0-7) of a `prefix`-bit (0-128) network of 128 bits. */
const GROUP_MASKS = new Uint16Array(129 * 8);
for (let prefix = 0; prefix <= 128; prefix++) {
  for (let i = 0; i < 8; i++) {
    const bits = prefix - i * 16;
    GROUP_MASKS[prefix * 8 + i] = bits >= 16 ? 0xffff : bits <= 0 ? 0 : 0xffff << (16 - bits);
  }
}

function groupMask(prefix: number, i: number): number {
  return GROUP_MASKS[prefix * 8 + i] as number;
}

/** The network address of `address` under a `prefix`-bit mask (host bits zeroed). */
export function networkAddress(address: IpAddress, prefix: number): IpAddress {
  if (address.family === 4) return IpAddress.v4(address.g6 & groupMask(prefix + 96, 6), address.g7 & groupMask(prefix + 96, 7));
  return IpAddress.v6(
    address.g0 & groupMask(prefix, 0),
    address.g1 & groupMask(prefix, 1),
    address.g2 & groupMask(prefix, 2),
    address.g3 & groupMask(prefix, 3),
    address.g4 & groupMask(prefix, 4),
    address.g5 & groupMask(prefix, 5),
    address.g6 & groupMask(prefix, 6),
    address.g7 & groupMask(prefix, 7),
  );
}

// ---- Canonical text ----------------------------------------------------------------------------------

const DECIMAL = Array.from({ length: 256 }, (_, i) => String(i));
const DECIMAL_DOT = DECIMAL.map((octet) => `${octet}.`);
/** Hex without leading zeros, and two-digit hex, of 0-255. */
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16));
const HEX2 = HEX.map((hex) => hex.padStart(2, '0'));

function formatV4(hi: number, lo: number): string {
  // Three concatenations of table strings: a template literal of seven parts costs twice as much.
  return (
    (DECIMAL_DOT[hi >>> 8] as string) +
    (DECIMAL_DOT[hi & 0xff] as string) +
    (DECIMAL_DOT[lo >>> 8] as string) +
    (DECIMAL[lo & 0xff] as string)
  );
}

function hexGroup(group: number): string {
  return group < 0x100 ? (HEX[group] as string) : (HEX[group >>> 8] as string) + (HEX2[group & 0xff] as string);
}

/** Scratch for the eight 16-bit groups of the address being formatted or parsed (never held across calls). */
const groups = new Uint16Array(8);

/**
 * RFC 5952 text of the groups in `groups`: lower-case hex without leading zeros; the longest run
 * (leftmost of equals) of two or more zero groups as `::`.
 */
function formatGroups(): string {
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
  return formatNetwork(address, address.family === 4 ? 32 : 128);
}

/**
 * `formatIpAddress(networkAddress(address, prefix))` without the intermediate address: the canonical
 * text of the `prefix`-bit network of `address`.
 */
export function formatNetwork(address: IpAddress, prefix: number): string {
  if (address.family === 4) return formatV4(address.g6 & groupMask(prefix + 96, 6), address.g7 & groupMask(prefix + 96, 7));
  groups[0] = address.g0 & groupMask(prefix, 0);
  groups[1] = address.g1 & groupMask(prefix, 1);
  groups[2] = address.g2 & groupMask(prefix, 2);
  groups[3] = address.g3 & groupMask(prefix, 3);
  groups[4] = address.g4 & groupMask(prefix, 4);
  groups[5] = address.g5 & groupMask(prefix, 5);
  groups[6] = address.g6 & groupMask(prefix, 6);
  groups[7] = address.g7 & groupMask(prefix, 7);
  return formatGroups();
}

// ---- Parsing -----------------------------------------------------------------------------------------

const DOT = 0x2e;
const COLON = 0x3a;

/** `HEX_VALUE[code]`: the value of the hex digit with char code `code` (below 128), or -1. */
const HEX_VALUE = new Int8Array(128).fill(-1);
for (let d = 0; d < 16; d++) {
  HEX_VALUE[d.toString(16).charCodeAt(0)] = d;
  HEX_VALUE[d.toString(16).toUpperCase().charCodeAt(0)] = d;
}

/** The value of hex digit `code`, or -1. */
function hexDigit(code: number): number {
  return code < 128 ? (HEX_VALUE[code] as number) : -1;
}

/**
 * The dotted quad `text[from, to)`: four decimal octets 0-255 without leading zeros, nothing else.
 * Written so, it is canonical: the text is kept as the address's text.
 */
function scanDottedQuad(text: string, from: number, to: number): IpAddress | undefined {
  let hi = 0;
  let lo = 0;
  let i = from;
  for (let octet = 0; octet < 4; octet++) {
    if (octet > 0) {
      if (i === to || text.charCodeAt(i) !== DOT) return undefined;
      i++;
    }
    // One to three digits, unrolled; a leading zero only as the whole octet.
    if (i === to) return undefined;
    let n = text.charCodeAt(i) - 0x30;
    if (n < 0 || n > 9) return undefined;
    i++;
    if (i < to) {
      const d1 = text.charCodeAt(i) - 0x30;
      if (d1 >= 0 && d1 <= 9) {
        if (n === 0) return undefined;
        n = n * 10 + d1;
        i++;
        if (i < to) {
          const d2 = text.charCodeAt(i) - 0x30;
          if (d2 >= 0 && d2 <= 9) {
            n = n * 10 + d2;
            i++;
            if (n > 255) return undefined; // a fourth digit fails as a missing dot or end
          }
        }
      }
    }
    if (octet < 2) hi = (hi << 8) | n;
    else lo = (lo << 8) | n;
  }
  if (i !== to) return undefined;
  return IpAddress.v4(hi, lo, from === 0 && to === text.length ? text : text.slice(from, to));
}

/**
 * Zone id characters after `%`: RFC 6874's unreserved (ALPHA, DIGIT, `-`, `.`, `_`, `~`) and `:`, which
 * Node's `isIP` also accepts. Node reports a link-local peer with its interface's name (`%docker_gwbridge`,
 * `%wg_0`), which `isIP` refuses for the `_`.
 */
function isZoneChar(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x3a) || // 0-9 and ':'
    ((code | 0x20) >= 0x61 && (code | 0x20) <= 0x7a) ||
    code === 0x2d ||
    code === DOT ||
    code === 0x5f ||
    code === 0x7e
  );
}

/** Whether `text` from `zone` (its `%`) on is a zone id: at least one character, each `isZoneChar`. */
function isZone(text: string, zone: number): boolean {
  if (zone === text.length - 1) return false;
  for (let i = zone + 1; i < text.length; i++) if (!isZoneChar(text.charCodeAt(i))) return false;
  return true;
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
  else if (!isZone(text, end)) return undefined;
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
    let next = -1; // the character after the group (a fifth hex digit fails below); -1 at the end
    while (true) {
      const c = text.charCodeAt(i);
      const digit = hexDigit(c);
      if (digit === -1) {
        next = c;
        break;
      }
      group = (group << 4) | digit;
      if (++i === end) break;
      if (i - start === 4) {
        next = text.charCodeAt(i);
        break;
      }
    }
    if (i === start || count === 8) return undefined;
    if (next !== -1 && next !== COLON) {
      // A dotted quad is read here only as `::ffff:a.b.c.d`; other text is not ours.
      if (next !== DOT || gap !== 0 || count !== 1 || groups[0] !== 0xffff) return undefined;
      return scanDottedQuad(text, start, end);
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
  return fromGroups(
    groups[0] as number,
    groups[1] as number,
    groups[2] as number,
    groups[3] as number,
    groups[4] as number,
    groups[5] as number,
    groups[6] as number,
    groups[7] as number,
  );
}

/** The address of eight groups: IPv4 when they are in ::ffff:0:0/96. */
function fromGroups(g0: number, g1: number, g2: number, g3: number, g4: number, g5: number, g6: number, g7: number): IpAddress {
  // In ::ffff:0:0/96? (ipaddr.js `isIPv4MappedAddress()` answers the same through a slow range lookup.)
  if ((g0 | g1 | g2 | g3 | g4) === 0 && g5 === 0xffff) return IpAddress.v4(g6, g7);
  return IpAddress.v6(g0, g1, g2, g3, g4, g5, g6, g7);
}

/** Starts with `::ffff:`, in any case. */
function isMappedHead(text: string): boolean {
  return (
    text.length > 7 &&
    text.charCodeAt(0) === COLON &&
    text.charCodeAt(1) === COLON &&
    (text.charCodeAt(2) | 0x20) === 0x66 &&
    (text.charCodeAt(3) | 0x20) === 0x66 &&
    (text.charCodeAt(4) | 0x20) === 0x66 &&
    (text.charCodeAt(5) | 0x20) === 0x66 &&
    text.charCodeAt(6) === COLON
  );
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
    if (v4 !== undefined) return v4;
  } else if (first === COLON && n <= 22 && isMappedHead(text)) {
    // `::ffff:a.b.c.d`, how a dual-stack socket reports an IPv4 peer; with a zone id, scanIpv6 reads it.
    const v4 = scanDottedQuad(text, 7, n);
    if (v4 !== undefined) return v4;
  }
  return scanIpv6(text);
}

/**
 * An embedded dotted quad rewritten as two hex groups (`::1.2.3.4` -> `::102:304`): ipaddr.js reads
 * `::a.b.c.d` as `::ffff:a.b.c.d`, which would key the two spellings of one address differently.
 */
function hexTail(text: string): string {
  const dot = text.indexOf('.');
  if (dot === -1) return text;
  const colon = text.lastIndexOf(':');
  const [a = 0, b = 0, c = 0, d = 0] = text
    .slice(colon + 1)
    .split('.')
    .map(Number);
  return `${text.slice(0, colon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

/** The reference: Node's `isIP` decides what is an address, ipaddr.js reads it. */
function parseReference(text: string): IpAddress | undefined {
  const zone = text.indexOf('%');
  if (zone !== -1 && !isZone(text, zone)) return undefined;
  const bare = zone === -1 ? text : text.slice(0, zone);
  const family = isIP(bare);
  if (family === 4 && zone === -1) {
    const [a = 0, b = 0, c = 0, d = 0] = ipaddr.IPv4.parse(text).octets;
    return IpAddress.v4((a << 8) | b, (c << 8) | d);
  }
  if (family !== 6) return undefined;
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = ipaddr.IPv6.parse(hexTail(bare)).parts;
  return fromGroups(g0, g1, g2, g3, g4, g5, g6, g7);
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
