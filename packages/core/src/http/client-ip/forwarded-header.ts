/**
 * @module Reads the hops of `X-Forwarded-For` or RFC 7239 `Forwarded` from the right, one at a time.
 * Reading from the right matters: the rightmost entries were written by our own proxies and are
 * well-formed; everything further left may come from the client. A left-to-right parse would let a
 * client's unterminated quote or junk swallow the entries our proxies appended. The reader stops at
 * the first entry that is not a usable address (empty, garbage, `unknown`, an obfuscated identifier,
 * oversized, or cut off by the length bound), so the caller never reads past it.
 */

/** Which forwarding header `keys.ip()` reads. */
export type ForwardingHeader = 'x-forwarded-for' | 'forwarded';

/**
 * Only this many characters, counted from the right end of the (joined) header, are read; an entry that
 * starts before them counts as malformed. Node accepts 16 KiB of headers in total by default.
 */
export const MAX_FORWARDING_HEADER_LENGTH = 8192;

/** An entry (`X-Forwarded-For`) or element (`Forwarded`) longer than this is malformed. */
export const MAX_HOP_LENGTH = 512;

const COMMA = 0x2c;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const SEMICOLON = 0x3b;
const EQUALS = 0x3d;
const BRACKET = 0x5b;

const XFF_BRACKETED = /^\[([^\]]*)\](?::([0-9]{1,5}))?$/;
const XFF_IPV4_PORT = /^([0-9.]{7,15}):([0-9]{1,5})$/;
const FWD_BRACKETED = /^\[([^\]]*)\](?::([0-9]{1,5}|_[A-Za-z0-9._-]+))?$/;
const FWD_PLAIN = /^([^:[\]]*)(?::([0-9]{1,5}|_[A-Za-z0-9._-]+))?$/;
const HAS_PORT_OR_BRACKET = /[:[\]]/;
/** A quoted-pair of RFC 9110 section 5.6.4 (validated before it is replaced by the character it escapes). */
const QUOTED_PAIR = /\\([\s\S])/g;

/** tchar of RFC 9110 section 5.6.2: ALPHA, DIGIT and ``!#$%&'*+-.^_`|~``. */
const TCHAR = new Uint8Array(128);
for (const c of "!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") TCHAR[c.charCodeAt(0)] = 1;

function isTchar(code: number): boolean {
  return code < 128 && TCHAR[code] === 1;
}

/** qdtext and quoted-pair octets of RFC 9110 section 5.6.4: HTAB, SP, visible ASCII, obs-text. */
function isQuotable(code: number): boolean {
  return code === 0x09 || (code >= 0x20 && code <= 0x7e) || (code >= 0x80 && code <= 0xff);
}

function isOws(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

function trimOws(text: string): string {
  let from = 0;
  let to = text.length;
  while (from < to && isOws(text.charCodeAt(from))) from++;
  while (to > from && isOws(text.charCodeAt(to - 1))) to--;
  return text.slice(from, to);
}

/** `[v6]`, `[v6]:port`, `v4:port`, `v4`: the address part, or undefined when the shape is wrong. */
function stripNode(node: string, bracketed: RegExp, withPort: RegExp): string | undefined {
  const isBracketed = node.startsWith('[');
  const m = (isBracketed ? bracketed : withPort).exec(node);
  if (m === null) return isBracketed ? undefined : node;
  const [, address = '', port] = m;
  // Brackets hold IPv6 only; a numeric port is at most 65535.
  if (isBracketed && !address.includes(':')) return undefined;
  if (port !== undefined && port[0] !== '_' && Number(port) > 65_535) return undefined;
  return address;
}

/**
 * The address of one `X-Forwarded-For` entry: a bare address, `a.b.c.d:port` or `[v6]:port` (as some
 * load balancers write). Returns undefined for an empty entry; other text is returned for the caller to
 * parse (and reject).
 */
export function xForwardedForNode(entry: string): string | undefined {
  const node = trimOws(entry);
  return node === '' ? undefined : xForwardedForAddress(node);
}

/** `xForwardedForNode` of an entry already trimmed and not empty. */
function xForwardedForAddress(node: string): string | undefined {
  // XFF_IPV4_PORT needs exactly one colon: skip the regex for bare IPv4 (none) and IPv6 (two or more).
  const colon = node.indexOf(':');
  if (node.charCodeAt(0) !== BRACKET && (colon === -1 || colon !== node.lastIndexOf(':'))) return node;
  return stripNode(node, XFF_BRACKETED, XFF_IPV4_PORT);
}

/**
 * The `for=` node of one `Forwarded` element (RFC 7239 section 4: `pair *( ";" pair )`, each `token "="
 * ( token / quoted-string )`, names case-insensitive, no name twice), with quotes, brackets and port
 * removed. Returns undefined when the element is malformed or has no `for`; `unknown` and obfuscated
 * identifiers (`_hidden`) come back as text the caller rejects as an address.
 */
export function forwardedForNode(element: string): string | undefined {
  const n = element.length;
  // Names seen so far, lower case; a short list beats a Set for the two or three pairs of an element.
  const seen: string[] = [];
  let forValue: string | undefined;
  let i = 0;
  while (true) {
    while (i < n && isOws(element.charCodeAt(i))) i++;
    if (i === n) break;
    if (element.charCodeAt(i) === SEMICOLON) {
      i++;
      continue;
    }
    const nameStart = i;
    while (i < n && isTchar(element.charCodeAt(i))) i++;
    if (i === nameStart || i === n || element.charCodeAt(i) !== EQUALS) return undefined;
    const name = element.slice(nameStart, i).toLowerCase();
    i++;
    let value = '';
    if (i < n && element.charCodeAt(i) === QUOTE) {
      i++;
      const valueStart = i;
      let escaped = false;
      let closed = false;
      while (i < n) {
        const c = element.charCodeAt(i);
        if (c === QUOTE) {
          closed = true;
          break;
        }
        if (c === BACKSLASH) {
          escaped = true;
          i++;
          if (i === n || !isQuotable(element.charCodeAt(i))) return undefined;
        } else if (!isQuotable(c)) {
          return undefined;
        }
        i++;
      }
      if (!closed) return undefined;
      // Without escapes the value is the quoted text as is; with them, unescape it.
      value = escaped ? element.slice(valueStart, i).replace(QUOTED_PAIR, '$1') : element.slice(valueStart, i);
      i++;
    } else {
      const valueStart = i;
      while (i < n && isTchar(element.charCodeAt(i))) i++;
      if (i === valueStart) return undefined;
      value = element.slice(valueStart, i);
    }
    if (seen.includes(name)) return undefined;
    seen.push(name);
    if (name === 'for') forValue = value;
    while (i < n && isOws(element.charCodeAt(i))) i++;
    if (i === n) break;
    if (element.charCodeAt(i) !== SEMICOLON) return undefined;
    i++;
  }
  if (forValue === undefined || forValue === '') return undefined;
  // An address without port or brackets (a colon, a bracket) is the node as it is.
  if (!HAS_PORT_OR_BRACKET.test(forValue)) return forValue;
  // FWD_PLAIN has no match for text with two colons: an unbracketed IPv6, which RFC 7239 forbids.
  return forValue.startsWith('[') || FWD_PLAIN.test(forValue) ? stripNode(forValue, FWD_BRACKETED, FWD_PLAIN) : undefined;
}

/** True when the quote at `at` is preceded by an even number of backslashes (so it is not escaped). */
function unescapedQuote(value: string, at: number, start: number): boolean {
  let count = 0;
  for (let k = at - 1; k >= start && value.charCodeAt(k) === BACKSLASH; k--) count++;
  return count % 2 === 0;
}

/**
 * Reads the hops of `value` from the right, one per `next()` call: a loop over this costs a fraction of
 * a generator, and the walk runs on every request behind a proxy. Commas inside `Forwarded` quoted
 * strings do not split elements.
 */
export class HopReader {
  private readonly start: number;
  private end: number;
  private done = false;

  constructor(
    private readonly value: string,
    private readonly format: ForwardingHeader,
  ) {
    this.start = Math.max(0, value.length - MAX_FORWARDING_HEADER_LENGTH);
    this.end = value.length;
  }

  /**
   * The address text of the next hop to the left (the rightmost, nearest, first); `undefined` for a hop
   * that is not a usable address, after which there are no more; `null` when there are no more.
   */
  next(): string | undefined | null {
    if (this.done) return null;
    const { value, format, start, end } = this;
    let inQuote = false;
    let sep = end - 1;
    for (; sep >= start; sep--) {
      const c = value.charCodeAt(sep);
      if (c === COMMA && !inQuote) break;
      if (c === QUOTE && format === 'forwarded' && unescapedQuote(value, sep, start)) inQuote = !inQuote;
    }
    // A hop reaching the window's left edge is whole only when the header starts there or a comma
    // stands just before it; otherwise it may go on to the left and is cut.
    const cut = sep < start && start > 0 && !(sep === start - 1 && value.charCodeAt(sep) === COMMA);
    if (cut || inQuote || end - sep - 1 > MAX_HOP_LENGTH) {
      this.done = true;
      return undefined;
    }
    let node: string | undefined;
    if (format === 'forwarded') node = forwardedForNode(value.slice(sep + 1, end));
    else {
      // Trim before slicing: one string per hop instead of two.
      let from = sep + 1;
      let to = end;
      while (from < to && isOws(value.charCodeAt(from))) from++;
      while (to > from && isOws(value.charCodeAt(to - 1))) to--;
      node = from === to ? undefined : xForwardedForAddress(value.slice(from, to));
    }
    // After a whole hop at the window's edge the walk goes on once more, to answer `undefined` for what
    // lies beyond the window (unread, so never taken for the leftmost hop).
    this.done = node === undefined || sep < 0;
    this.end = sep;
    return node;
  }
}
