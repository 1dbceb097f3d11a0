/**
 * Property tests of `keys.ip()` against random forwarding headers and socket addresses.
 *
 * The invariant, for every request: let hop 0 be the socket peer and hops 1..n the header entries read
 * from the right (hop 1 = rightmost). The key is undefined exactly when hop 0 is missing or not an IP
 * address. Otherwise it is the key of some hop k such that
 *   (a) hop k is the socket address or an address written in the header (never text a parser made up),
 *   (b) every hop j < k is a well-formed address inside `trustedProxies`, and
 *   (c) the walk took the first stopping point: hop k is untrusted, or hop k+1 is malformed or absent.
 * So a spoofed header from an untrusted peer changes nothing (k = 0), a trusted hop is never chosen when
 * an untrusted one is reachable to its left, and garbage never becomes a key. It never throws.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { requestView, viewFactory } from '../../testing/request-view-fixture.js';
import type { ForwardingHeader } from '../client-ip/forwarded-header.js';
import { parseIpAddress } from '../client-ip/ip-address.js';
import type { HeaderBag } from '../request-view.js';
import { type IpKeyOptions, ipKey } from './ip-key.js';

const TRUSTED = ['loopback', '10.0.0.0/8', 'fd00::/8'];

/** The key a client at `address` gets when it connects directly: the reference for "keyed as hop k". */
function directKey(address: string, options: IpKeyOptions = {}): string | undefined {
  const { view } = requestView({ remoteAddress: address });
  return ipKey({ ...options, trustedProxies: [] })({}, view) as string | undefined;
}

function keyOf(options: IpKeyOptions, remoteAddress: string | undefined, headers: HeaderBag): string | undefined {
  const { view } = requestView({ remoteAddress, headers });
  return ipKey(options)({}, view) as string | undefined;
}

/** An address as a generator knows it: plain text, whether it is trusted, and its written forms. */
interface Address {
  readonly plain: string;
  readonly trusted: boolean;
  readonly v6: boolean;
  /** Spellings a socket or a proxy may use for this same address. */
  readonly spellings: readonly string[];
}

const byte = fc.integer({ min: 0, max: 255 });
const hex16 = fc.integer({ min: 0, max: 0xffff });

function v4(octets: number[], trusted: boolean): Address {
  const dotted = octets.join('.');
  const hi = ((octets[0] ?? 0) * 256 + (octets[1] ?? 0)).toString(16);
  const lo = ((octets[2] ?? 0) * 256 + (octets[3] ?? 0)).toString(16);
  const spellings = [dotted, `::ffff:${dotted}`, `::FFFF:${hi.toUpperCase()}:${lo}`, `0:0:0:0:0:ffff:${hi}:${lo}`];
  // NAT64 spellings are IPv6 to the trust check (only IPv4-mapped is the same socket), so only untrusted ones use them.
  if (!trusted) spellings.push(`64:ff9b::${dotted}`, `64:ff9b::${hi}:${lo}`);
  return { plain: dotted, trusted, v6: false, spellings };
}

function v6(parts: number[], trusted: boolean): Address {
  const full = parts.map((p) => p.toString(16).padStart(4, '0')).join(':');
  const short = parts.map((p) => p.toString(16)).join(':');
  return {
    plain: short,
    trusted,
    v6: true,
    spellings: [short, full, full.toUpperCase(), `${short}%eth0`, `${short}%en0.7`],
  };
}

const trustedV4 = fc.oneof(
  fc.tuple(byte, byte, byte).map(([b, c, d]) => v4([10, b, c, d], true)),
  fc.tuple(byte, byte, byte).map(([b, c, d]) => v4([127, b, c, d], true)),
);
const untrustedV4 = fc
  .tuple(fc.integer({ min: 1, max: 223 }), byte, byte, byte)
  .filter(([a]) => a !== 10 && a !== 127)
  .map((o) => v4(o, false));
const trustedV6 = fc.oneof(
  fc
    .tuple(fc.integer({ min: 0xfd00, max: 0xfdff }), fc.array(hex16, { minLength: 7, maxLength: 7 }))
    .map(([a, rest]) => v6([a, ...rest], true)),
  fc.constant(v6([0, 0, 0, 0, 0, 0, 0, 1], true)),
);
const untrustedV6 = fc
  .tuple(fc.array(hex16, { minLength: 2, maxLength: 2 }), fc.array(hex16, { minLength: 4, maxLength: 4 }))
  .map(([net, host]) => v6([0x2001, 0xdb8, ...net, ...host], false));
const address = fc.oneof(trustedV4, untrustedV4, trustedV6, untrustedV6);

/** One header entry: an address written some way, or garbage (with what the walk must make of it). */
type Entry =
  | { readonly kind: 'address'; readonly address: Address; readonly text: string }
  | { readonly kind: 'garbage'; readonly text: string };

const ows = fc.constantFrom('', ' ', '  ', '\t');
const port = fc.integer({ min: 0, max: 65_535 });

function xffEntry(a: Address): fc.Arbitrary<Entry> {
  const spelled = fc.constantFrom(...a.spellings);
  const written = a.v6
    ? fc.oneof(
        spelled,
        fc.constant(`[${a.plain}]`),
        port.map((p) => `[${a.plain}]:${p}`),
      )
    : fc.oneof(
        spelled,
        port.map((p) => `${a.plain}:${p}`),
      );
  return fc.tuple(ows, written, ows).map(([l, w, r]) => ({ kind: 'address', address: a, text: `${l}${w}${r}` }));
}

function forwardedEntry(a: Address): fc.Arbitrary<Entry> {
  const node = a.v6
    ? fc.oneof(
        fc.constant(`"[${a.plain}]"`),
        port.map((p) => `"[${a.plain}]:${p}"`),
        fc.constant(`"[${a.plain}]:_obf"`),
      )
    : fc.oneof(
        fc.constant(a.plain),
        fc.constant(`"${a.plain}"`),
        port.map((p) => `"${a.plain}:${p}"`),
      );
  const name = fc.constantFrom('for', 'For', 'FOR');
  // Parameter names differ between `before` and `extra`: a name twice in one element is malformed.
  const extra = fc.constantFrom('', ';proto=https', ';by=10.0.0.1', ';ext="a,b;c"', ';proto=http;by="[fd00::1]:80"');
  const before = fc.constantFrom('', 'host=example.com;', 'Host="h:8080"; ');
  return fc
    .tuple(ows, before, name, node, extra, ows)
    .map(([l, b, n, v, e, r]) => ({ kind: 'address', address: a, text: `${l}${b}${n}=${v}${e}${r}` }));
}

/** Garbage without commas (a comma would make it two entries) and, for Forwarded, without quotes. */
function garbage(format: ForwardingHeader): fc.Arbitrary<Entry> {
  const handPicked =
    format === 'x-forwarded-for'
      ? [
          '',
          ' ',
          'unknown',
          '_hidden',
          '0x7f.0.0.1',
          '010.0.0.1',
          '2130706433',
          '1.2.3',
          '[::1',
          '[1.2.3.4]',
          '1.2.3.4:99999',
          'fe80::1%',
          'a'.repeat(600),
        ]
      : [
          '',
          'for=unknown',
          'for=_hidden',
          'proto=https',
          'for=[::1]',
          'for=2001:db8::1',
          'for=1.2.3.4;for=1.2.3.5',
          'for=1.2.3.4 by=x',
          `for=${'1'.repeat(600)}`,
        ];
  const random = fc
    .string({ unit: 'binary', maxLength: 30 })
    .filter((s) => !s.includes(',') && !(format === 'forwarded' && (s.includes('"') || s.includes('\\'))))
    .map((s) => (format === 'forwarded' ? `for=x${s}` : `x${s}`));
  return fc.oneof(fc.constantFrom(...handPicked), random).map((text) => ({ kind: 'garbage', text }));
}

function entry(format: ForwardingHeader): fc.Arbitrary<Entry> {
  const write = format === 'forwarded' ? forwardedEntry : xffEntry;
  return fc.oneof({ arbitrary: address.chain(write), weight: 4 }, { arbitrary: garbage(format), weight: 1 });
}

/** Entries (leftmost first) split into 1-3 header lines, joined by a comma with random spaces. */
function header(entries: readonly Entry[], cuts: readonly number[], separator: string): string | string[] {
  const texts = entries.map((e) => e.text);
  const points = [...new Set(cuts.map((c) => c % (texts.length + 1)))].sort((a, b) => a - b).filter((c) => c > 0 && c < texts.length);
  if (points.length === 0) return texts.join(separator);
  const lines: string[] = [];
  let from = 0;
  for (const p of [...points, texts.length]) {
    lines.push(texts.slice(from, p).join(separator));
    from = p;
  }
  return lines;
}

/** The model walk of the invariant: the plain text of the hop the key must come from. */
function expectedHop(socket: Address, entries: readonly Entry[]): string {
  let client = socket;
  if (!client.trusted) return client.plain;
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i] as Entry;
    if (e.kind === 'garbage') return client.plain;
    client = e.address;
    if (!client.trusted) return client.plain;
  }
  return client.plain;
}

describe.each<ForwardingHeader>(['x-forwarded-for', 'forwarded'])('keys.ip() properties, header %s', (format) => {
  const options: IpKeyOptions = { trustedProxies: TRUSTED, header: format };

  it('keys the first untrusted hop from the right, past trusted hops, stopping at garbage', () => {
    fc.assert(
      fc.property(
        address.chain((a) => fc.tuple(fc.constant(a), fc.constantFrom(...a.spellings))),
        fc.array(entry(format), { maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 2 }),
        fc.constantFrom(',', ', ', ' , ', ',\t'),
        ([socket, socketText], entries, cuts, separator) => {
          const value = header(entries, cuts, separator);
          const headers = entries.length === 0 ? {} : { [format]: value };
          const actual = keyOf(options, socketText, headers);
          expect(actual).toBe(directKey(expectedHop(socket, entries)));
        },
      ),
      { numRuns: 400 },
    );
  });

  it('never lets an untrusted peer choose its key, whatever the headers say', () => {
    fc.assert(
      fc.property(
        fc.oneof(untrustedV4, untrustedV6).chain((a) => fc.tuple(fc.constant(a), fc.constantFrom(...a.spellings))),
        fc.string({ unit: 'binary', maxLength: 200 }),
        fc.array(entry(format), { maxLength: 6 }),
        ([socket, socketText], noise, entries) => {
          const expected = directKey(socket.plain);
          for (const value of [noise, entries.map((e) => e.text).join(',')]) {
            expect(keyOf(options, socketText, { 'x-forwarded-for': value, forwarded: value })).toBe(expected);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

/** Every IP address text inside `text` (and inside it with quoted-pair escapes removed), as keys. */
function keysInside(text: string, options: IpKeyOptions): Set<string | undefined> {
  const found = new Set<string | undefined>();
  for (const source of [text, text.replace(/\\(.)/gs, '$1')]) {
    for (let i = 0; i < source.length; i++) {
      for (let j = i + 2; j <= Math.min(source.length, i + 64); j++) {
        const candidate = source.slice(i, j);
        if (parseIpAddress(candidate) !== undefined) found.add(directKey(candidate, options));
      }
    }
  }
  return found;
}

const pieces = fc.constantFrom(
  ',',
  ';',
  '"',
  '\\',
  '[',
  ']',
  ':',
  ' ',
  '=',
  'for=',
  'FOR=',
  '_x',
  'unknown',
  '%eth0',
  '10.0.0.2',
  '127.0.0.1',
  '203.0.113.7',
  '::1',
  '::ffff:',
  '2001:db8::1',
  'fd00::9',
  '64:ff9b::',
  ':443',
  '\u0000',
  '\r\n',
  'é',
  '\uD800',
);
const fuzzHeader = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 120 }),
  fc.array(pieces, { maxLength: 24 }).map((p) => p.join('')),
);
const fuzzSocket = fc.oneof(
  address.chain((a) => fc.constantFrom(...a.spellings)),
  fc.string({ maxLength: 20 }),
  fc.constant(undefined),
);

describe('keys.ip() fuzz', () => {
  it('never throws; keys only the socket or an address written in the header; never a malformed key', () => {
    fc.assert(
      fc.property(
        fuzzSocket,
        fuzzHeader,
        fc.constantFrom<ForwardingHeader>('x-forwarded-for', 'forwarded'),
        fc.constantFrom<IpKeyOptions>({}, { ipv6Prefix: 128 }, { ipv6Prefix: 56, ipv4Prefix: 24 }),
        (socketText, value, format, prefixes) => {
          const options: IpKeyOptions = { ...prefixes, trustedProxies: TRUSTED, header: format };
          const lines = value.includes('\n') ? value.split('\n') : value;
          const key = keyOf(options, socketText, { [format]: lines });
          const socketKey = socketText === undefined ? undefined : directKey(socketText, prefixes);
          if (socketKey === undefined) {
            expect(key).toBeUndefined();
            return;
          }
          expect(key).toMatch(/^ip:(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|[0-9a-f:]+)(?:\/[0-9]{1,3})?$/);
          const [, text = '', bits] = /^ip:([^/]+)(?:\/(\d+))?$/.exec(key as string) ?? [];
          expect(parseIpAddress(text)).toBeDefined();
          if (bits !== undefined) expect(Number(bits)).toBeLessThan(text.includes(':') ? 128 : 32);
          if (key !== socketKey) expect(keysInside(value, prefixes).has(key)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('keys.ip() remembers nothing that changes a result', () => {
  it('one long-lived function keys and warns exactly as a fresh function per request', () => {
    const request = fc.record({
      socket: fc.integer({ min: 0, max: 5 }),
      format: fc.constantFrom<ForwardingHeader>('x-forwarded-for', 'forwarded'),
      entries: fc.array(entry('x-forwarded-for'), { maxLength: 3 }),
      sent: fc.boolean(),
    });
    fc.assert(
      fc.property(
        fc.array(
          address.chain((a) => fc.constantFrom(...a.spellings)),
          { minLength: 6, maxLength: 6 },
        ),
        fc.array(request, { minLength: 1, maxLength: 30 }),
        (sockets, requests) => {
          const options: IpKeyOptions = { trustedProxies: TRUSTED };
          const longLived = ipKey(options);
          const [a, b] = [viewFactory(), viewFactory()];
          for (const r of requests) {
            const remoteAddress = sockets[r.socket];
            const value = r.entries
              .map((e) => (r.format === 'forwarded' && e.kind === 'address' ? `for="${e.text.trim()}"` : e.text))
              .join(',');
            const headers: HeaderBag = r.sent ? { [r.format]: value } : {};
            expect(longLived({}, a.view({ remoteAddress, headers }))).toBe(ipKey(options)({}, b.view({ remoteAddress, headers })));
          }
          expect(a.logger.warnings).toEqual(b.logger.warnings);
        },
      ),
      { numRuns: 300 },
    );
  });
});
