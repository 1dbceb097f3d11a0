/**
 * Differential property tests: the integer address code (ip-address.ts, the trust check of
 * trusted-proxies.ts, the keying of ip-key.ts) against the reference normalisation (isIP + ipaddr.js, in
 * ip-address-reference.ts) on every spelling of random addresses (compressed, full, padded, upper and
 * mixed case, IPv4-mapped dotted and hex, NAT64, IPv4-compatible, zone ids good and bad), on mutations
 * of them and on garbage.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type ReferenceAddress,
  referenceFormat,
  referenceInRange,
  referenceKey,
  referenceNetwork,
  referenceParse,
} from '../../testing/ip-address-reference.js';
import { requestView } from '../../testing/request-view-fixture.js';
import { type IpKeyOptions, ipKey } from '../keys/ip-key.js';
import { formatIpAddress, networkAddress, parseCommonForm, parseIpAddress } from './ip-address.js';
import { compileTrustedProxies } from './trusted-proxies.js';

const RUNS = { numRuns: 2000 };

const group = fc.oneof(
  { weight: 3, arbitrary: fc.constant(0) },
  { weight: 1, arbitrary: fc.constantFrom(1, 0xffff, 0x64, 0xff9b, 0xfe80, 0xdb8, 0x2001, 0xa, 0x100, 0xfff) },
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 0xffff }) },
);

/** Eight groups, often with the prefixes that are special to keys.ip(). */
const groups8 = fc.oneof(
  fc.array(group, { minLength: 8, maxLength: 8 }),
  fc
    .tuple(
      fc.constantFrom(
        [0, 0, 0, 0, 0, 0xffff],
        [0x64, 0xff9b, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0],
        [0, 0, 0, 0, 0xffff, 0],
        [0x64, 0xff9b, 1, 0, 0, 0],
        [0xfe80, 0, 0, 0, 0, 0],
        [0x2001, 0xdb8, 0, 0, 0, 0],
      ),
      group,
      group,
    )
    .map(([prefix, a, b]) => [...prefix, a, b]),
);

const ZONES = [
  '',
  '',
  '',
  '%eth0',
  '%en0.100',
  '%1',
  '%a:b',
  '%A-Z',
  '%',
  '%eth 0',
  '%eth_0',
  '%docker_gwbridge',
  '%wg~0',
  '%eth/0',
  '%%',
  '%é',
  '%eth0%1',
];

/** How to write eight groups: which zero run to compress, padding, case, a dotted-quad tail, a zone id. */
const v6Spelling = fc.record({
  run: fc.nat(),
  compress: fc.boolean(),
  pad: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 8, maxLength: 8 }),
  letterCase: fc.constantFrom('lower', 'upper', 'mixed'),
  dotted: fc.boolean(),
  zone: fc.constantFrom(...ZONES),
});

function hex(value: number, pad: number, letterCase: string, seed: number): string {
  const digits = value.toString(16);
  const padded = '0'.repeat(Math.min(pad, 4 - digits.length)) + digits;
  if (letterCase === 'lower') return padded;
  if (letterCase === 'upper') return padded.toUpperCase();
  return [...padded].map((c, i) => ((seed >> i) & 1 ? c.toUpperCase() : c)).join('');
}

function spellV6(g: readonly number[], s: Spelling): string {
  const hexCount = s.dotted ? 6 : 8;
  const parts = g.slice(0, hexCount).map((value, i) => hex(value, s.pad[i] ?? 0, s.letterCase, s.run + i));
  const tail = s.dotted ? [g[6] ?? 0, g[7] ?? 0].flatMap((x) => [x >> 8, x & 0xff]).join('.') : undefined;
  // Every run of zero groups (of any length) among the hex groups may be written as `::`.
  const runs: [number, number][] = [];
  for (let from = 0; from < hexCount; from++) {
    for (let to = from; to < hexCount && g[to] === 0; to++) runs.push([from, to + 1]);
  }
  let text: string;
  const chosen = runs[s.run % Math.max(1, runs.length)];
  if (s.compress && chosen !== undefined) {
    const [from, to] = chosen;
    const left = parts.slice(0, from).join(':');
    const right = [...parts.slice(to), ...(tail === undefined ? [] : [tail])].join(':');
    text = `${left}::${right}`;
  } else {
    text = [...parts, ...(tail === undefined ? [] : [tail])].join(':');
  }
  return text + s.zone;
}

interface Spelling {
  readonly run: number;
  readonly compress: boolean;
  readonly pad: readonly number[];
  readonly letterCase: string;
  readonly dotted: boolean;
  readonly zone: string;
}

const octet = fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0, 1, 10, 127, 255));
const v4Text = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(octet, octet, octet, octet).map((o) => o.join('.')) },
  // Leading zeros, out-of-range octets, short forms: refused.
  {
    weight: 1,
    arbitrary: fc
      .tuple(octet, octet, octet, octet, fc.nat(3))
      .map(([a, b, c, d, i]) => [a, b, c, d].map((x, k) => (k === i ? `0${x}` : x)).join('.')),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom('256.0.0.1', '1.2.3', '1.2.3.4.5', '1..2.3', '.1.2.3', '1.2.3.', '0x7f.0.0.1', '2130706433', '1.2.3.04'),
  },
);

const v6Text = fc.tuple(groups8, v6Spelling).map(([g, s]) => spellV6(g, s));

/** Hand-picked edge cases of the IPv6 grammar. */
const edges = fc.constantFrom(
  '::',
  ':::',
  '::1',
  '1::',
  ':1::',
  '1::2::3',
  '1:2:3:4:5:6:7:8',
  '1:2:3:4:5:6:7:8:9',
  '1:2:3:4:5:6:7::',
  '::2:3:4:5:6:7:8',
  '1:2:3:4:5:6:7:8::',
  '::1:2:3:4:5:6:7:8',
  '1:2:3:4::5:6:7:8',
  '1:2:3:4:5:6:7:',
  ':1:2:3:4:5:6:7',
  '12345::1',
  '::ffff:1.2.3.4',
  '::FFFF:1.2.3.4',
  '::fFfF:255.255.255.255',
  '::ffff:01.2.3.4',
  '::ffff:1.2.3',
  '::ffff:1.2.3.4.5',
  '::ffff:1234.2.3.4',
  '::ffff:ab.2.3.4',
  '::fffff:1.2.3.4',
  '::0ffff:1.2.3.4',
  ':ffff:1.2.3.4',
  '::ffff::1.2.3.4',
  '::ffff:1.2.3.4%eth0',
  '::ffff:1.2.3.4%',
  '::1.2.3.4',
  '::1.2.3.4%eth0',
  '0::1.2.3.4',
  '::0:1.2.3.4',
  '64:ff9b::1.2.3.4',
  '1:2:3:4:5:6:1.2.3.4',
  '1:2:3:4:5:6:7:1.2.3.4',
  '1:2:3:4:5::1.2.3.4',
  '1:2:3:4:5:6::1.2.3.4',
  '0:0:0:0:0:ffff:1.2.3.4',
  '0:0:0:0:0:FFFF:cb00:7107',
  '::ffff:cb00:7107',
  '::ffff:0:0',
  '::ffff:0.0.0.0',
  'fe80::1%eth0',
  'fe80::%eth0',
  '::%eth0',
  'fe80::1%',
  'fe80::1%%',
  '1.2.3.4%eth0',
  '[::1]',
  '::1 ',
  ' ::1',
  '::g',
  '0:0:0:0:0:0:0:0',
  '0000:0000:0000:0000:0000:0000:0000:0000',
  '00000:0:0:0:0:0:0:0',
);

/** Up to three random insertions, deletions or replacements from an alphabet addresses are made of. */
function mutated(base: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const edit = fc.tuple(fc.constantFrom('insert', 'delete', 'replace'), fc.nat(), fc.constantFrom(...'0129afAFg:.%[] -x'));
  return fc.tuple(base, fc.array(edit, { minLength: 1, maxLength: 3 })).map(([text, edits]) => {
    let out = text;
    for (const [kind, at, c] of edits) {
      const i = out.length === 0 ? 0 : at % (out.length + (kind === 'insert' ? 1 : 0));
      if (kind === 'insert') out = out.slice(0, i) + c + out.slice(i);
      else if (kind === 'delete') out = out.slice(0, i) + out.slice(i + 1);
      else out = out.slice(0, i) + c + out.slice(i + 1);
    }
    return out;
  });
}

const soup = fc
  .array(
    fc.constantFrom(
      '0',
      '1',
      '00',
      '255',
      '256',
      'ffff',
      'FFFF',
      'fe80',
      '64',
      'ff9b',
      '::',
      ':',
      '.',
      '%',
      'eth0',
      '1.2.3.4',
      'g',
      '12345',
    ),
    {
      maxLength: 24,
    },
  )
  .map((tokens) => tokens.join(''));

const anyText = fc.oneof(
  { weight: 3, arbitrary: v4Text },
  { weight: 6, arbitrary: v6Text },
  { weight: 2, arbitrary: edges },
  { weight: 3, arbitrary: mutated(fc.oneof(v4Text, v6Text, edges)) },
  { weight: 2, arbitrary: soup },
  { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF:.%'), maxLength: 70 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 70 }) },
);

/** The reference's reading of `text`, or 'throws' (isIP accepted what ipaddr.js then refused). */
function reference(text: string): ReferenceAddress | undefined | 'throws' {
  try {
    return referenceParse(text);
  } catch {
    return 'throws';
  }
}

describe('parseIpAddress agrees with the reference (isIP + ipaddr.js)', () => {
  it('accepts, refuses, maps and prints every text as the reference does', () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const expected = reference(text);
        expect(expected).not.toBe('throws');
        const actual = parseIpAddress(text);
        if (expected === undefined || expected === 'throws') {
          expect(actual).toBeUndefined();
          return;
        }
        expect(actual?.kind()).toBe(expected.kind());
        expect(actual === undefined ? undefined : formatIpAddress(actual)).toBe(referenceFormat(expected));
      }),
      RUNS,
    );
  });

  it('masks every prefix length as the reference does', () => {
    fc.assert(
      fc.property(anyText, fc.nat(128), (text, bits) => {
        const expected = reference(text);
        const actual = parseIpAddress(text);
        if (expected === undefined || expected === 'throws' || actual === undefined) return;
        const prefix = expected.kind() === 'ipv4' ? bits % 33 : bits;
        expect(formatIpAddress(networkAddress(actual, prefix))).toBe(referenceFormat(referenceNetwork(expected, prefix)));
      }),
      RUNS,
    );
  });

  it('reads the forms sockets and proxies write without the reference parser', () => {
    const hexOnly = fc
      .tuple(groups8, v6Spelling, fc.constantFrom('', '%eth0', '%en0.100'))
      .map(([g, s, zone]) => spellV6(g, { ...s, dotted: false, zone }));
    const mapped = fc
      .tuple(octet, octet, octet, octet, fc.constantFrom('::ffff:', '::FFFF:', '::Ffff:'), fc.constantFrom('', '%eth0'))
      .map(([a, b, c, d, head, zone]) => `${head}${a}.${b}.${c}.${d}${zone}`);
    const dotted = fc.tuple(octet, octet, octet, octet).map((o) => o.join('.'));
    fc.assert(
      fc.property(fc.oneof(hexOnly, mapped, dotted), (text) => {
        expect(parseCommonForm(text)).toBeDefined();
      }),
      RUNS,
    );
  });
});

describe('keys.ip() keys a direct client as the reference does', () => {
  const options = fc.record({
    ipv4Prefix: fc.oneof(fc.constant(32), fc.integer({ min: 16, max: 32 })),
    ipv6Prefix: fc.oneof(fc.constant(64), fc.integer({ min: 32, max: 128 })),
    nat64Prefixes: fc.subarray(['64:ff9b::/96', '2001:db8:64::/96', '::/96', '::ffff:0:0:0/96']),
  });

  it('for every text and every prefix and NAT64 setting', () => {
    fc.assert(
      fc.property(anyText, options, (text, opts) => {
        const { view } = requestView({ remoteAddress: text });
        const key = ipKey(opts satisfies IpKeyOptions)({}, view);
        expect(key).toBe(referenceKey(text, opts));
      }),
      RUNS,
    );
  });
});

describe('the trust check agrees with ipaddr.js range matching', () => {
  /** A valid CIDR around a random address: IPv4, IPv6 or IPv4-mapped. */
  const cidr = fc.oneof(
    fc.tuple(fc.tuple(octet, octet, octet, octet), fc.nat(32)).map(([o, p]) => {
      const network = referenceNetwork(referenceParse(o.join('.')) as ReferenceAddress, p);
      return `${referenceFormat(network)}/${p}`;
    }),
    fc.tuple(groups8, fc.nat(128)).map(([g, p]) => {
      const address = referenceParse(g.map((x) => x.toString(16)).join(':')) as ReferenceAddress;
      if (address.kind() === 'ipv4') return `::ffff:${referenceFormat(referenceNetwork(address, p % 33))}/${96 + (p % 33)}`;
      return `${referenceFormat(referenceNetwork(address, p))}/${p}`;
    }),
    fc.constantFrom('loopback', 'private', '0.0.0.0/0', '::/0', '::ffff:10.0.0.0/104', '203.0.113.7', '::1'),
  );

  it('for every address and every list of ranges', () => {
    fc.assert(
      fc.property(anyText, fc.array(cidr, { maxLength: 4 }), (text, list) => {
        const expected = reference(text);
        const actual = parseIpAddress(text);
        if (expected === undefined || expected === 'throws' || actual === undefined) return;
        const expanded = list.flatMap((entry) =>
          entry === 'loopback'
            ? ['127.0.0.0/8', '::1/128']
            : entry === 'private'
              ? ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7', '169.254.0.0/16', 'fe80::/10']
              : [entry],
        );
        const trusted = compileTrustedProxies(list, 'trustedProxies').has(actual);
        expect(trusted).toBe(expanded.some((entry) => referenceInRange(expected, entry)));
      }),
      RUNS,
    );
  });
});
