/**
 * @module Test support: the forwarding-header reader as first written (a generator, regexes on every
 * entry, a Set per `Forwarded` element), kept unchanged as the reference the property test in
 * forwarded-header.property.test.ts holds the faster reader in forwarded-header.ts to. Not part of the
 * package entry point.
 */

import type { ForwardingHeader } from '../http/client-ip/forwarded-header.js';

/**
 * Only this many characters, counted from the right end of the (joined) header, are read; an entry that
 * starts before them counts as malformed. Node accepts 16 KiB of headers in total by default.
 */
const MAX_FORWARDING_HEADER_LENGTH = 8192;

/** An entry (`X-Forwarded-For`) or element (`Forwarded`) longer than this is malformed. */
const MAX_HOP_LENGTH = 512;

const COMMA = 0x2c;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const SEMICOLON = 0x3b;
const EQUALS = 0x3d;

const XFF_BRACKETED = /^\[([^\]]*)\](?::([0-9]{1,5}))?$/;
const XFF_IPV4_PORT = /^([0-9.]{7,15}):([0-9]{1,5})$/;
const FWD_BRACKETED = /^\[([^\]]*)\](?::([0-9]{1,5}|_[A-Za-z0-9._-]+))?$/;
const FWD_PLAIN = /^([^:[\]]*)(?::([0-9]{1,5}|_[A-Za-z0-9._-]+))?$/;

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
export function referenceXForwardedForNode(entry: string): string | undefined {
  const node = trimOws(entry);
  return node === '' ? undefined : stripNode(node, XFF_BRACKETED, XFF_IPV4_PORT);
}

/**
 * The `for=` node of one `Forwarded` element (RFC 7239 section 4: `pair *( ";" pair )`, each `token "="
 * ( token / quoted-string )`, names case-insensitive, no name twice), with quotes, brackets and port
 * removed. Returns undefined when the element is malformed or has no `for`; `unknown` and obfuscated
 * identifiers (`_hidden`) come back as text the caller rejects as an address.
 */
export function referenceForwardedForNode(element: string): string | undefined {
  const n = element.length;
  const seen = new Set<string>();
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
    if (i === nameStart || element.charCodeAt(i) !== EQUALS) return undefined;
    const name = element.slice(nameStart, i).toLowerCase();
    i++;
    let value = '';
    if (element.charCodeAt(i) === QUOTE) {
      i++;
      let closed = false;
      while (i < n) {
        const c = element.charCodeAt(i);
        if (c === QUOTE) {
          closed = true;
          i++;
          break;
        }
        if (c === BACKSLASH) {
          i++;
          if (i === n || !isQuotable(element.charCodeAt(i))) return undefined;
        } else if (!isQuotable(c)) {
          return undefined;
        }
        value += element[i];
        i++;
      }
      if (!closed) return undefined;
    } else {
      const valueStart = i;
      while (i < n && isTchar(element.charCodeAt(i))) i++;
      if (i === valueStart) return undefined;
      value = element.slice(valueStart, i);
    }
    if (seen.has(name)) return undefined;
    seen.add(name);
    if (name === 'for') forValue = value;
    while (i < n && isOws(element.charCodeAt(i))) i++;
    if (i === n) break;
    if (element.charCodeAt(i) !== SEMICOLON) return undefined;
    i++;
  }
  if (forValue === undefined || forValue === '') return undefined;
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
 * Yields the address text of each hop of `value`, rightmost (nearest) first; `undefined` marks a hop that
 * is not a usable address, after which nothing more is yielded. Commas inside `Forwarded` quoted strings
 * do not split elements.
 */
export function* referenceHopsFromRight(value: string, format: ForwardingHeader): Generator<string | undefined, void, void> {
  const start = Math.max(0, value.length - MAX_FORWARDING_HEADER_LENGTH);
  let end = value.length;
  while (true) {
    let inQuote = false;
    let sep = end - 1;
    for (; sep >= start; sep--) {
      const c = value.charCodeAt(sep);
      if (c === COMMA && !inQuote) break;
      if (c === QUOTE && format === 'forwarded' && unescapedQuote(value, sep, start)) inQuote = !inQuote;
    }
    const cut = sep < start && start > 0;
    if (cut || inQuote || end - sep - 1 > MAX_HOP_LENGTH) {
      yield undefined;
      return;
    }
    const entry = value.slice(sep + 1, end);
    const node = format === 'forwarded' ? referenceForwardedForNode(entry) : referenceXForwardedForNode(entry);
    yield node;
    if (node === undefined || sep < start) return;
    end = sep;
  }
}
