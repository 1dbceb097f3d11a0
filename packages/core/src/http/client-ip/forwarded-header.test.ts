import { describe, expect, it } from 'vitest';
import { hopsFromRight } from '../../testing/client-address.js';
import {
  type ForwardingHeader,
  forwardedForNode,
  MAX_FORWARDING_HEADER_LENGTH,
  MAX_HOP_LENGTH,
  xForwardedForNode,
} from './forwarded-header.js';

const hops = (value: string, format: ForwardingHeader) => [...hopsFromRight(value, format)];

describe('xForwardedForNode', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['  203.0.113.7\t', '203.0.113.7'],
    ['203.0.113.7:8080', '203.0.113.7'],
    ['[2001:db8::1]', '2001:db8::1'],
    ['[2001:db8::1]:443', '2001:db8::1'],
    ['2001:db8::1', '2001:db8::1'],
    // Left for the address parser to refuse:
    ['unknown', 'unknown'],
    ['203.0.113.7:99999', undefined],
    ['[203.0.113.7]', undefined],
    ['[2001:db8::1', undefined],
    ['[2001:db8::1]:_obf', undefined],
    ['', undefined],
    ['   ', undefined],
  ])('%j -> %j', (entry, expected) => {
    expect(xForwardedForNode(entry)).toBe(expected);
  });
});

describe('forwardedForNode (RFC 7239 section 4)', () => {
  it.each([
    ['for=192.0.2.60', '192.0.2.60'],
    ['For=192.0.2.60', '192.0.2.60'],
    ['FOR="192.0.2.60"', '192.0.2.60'],
    ['for="192.0.2.60:47011"', '192.0.2.60'],
    ['for="[2001:db8:cafe::17]"', '2001:db8:cafe::17'],
    ['for="[2001:db8:cafe::17]:4711"', '2001:db8:cafe::17'],
    ['for="[2001:db8:cafe::17]:_port"', '2001:db8:cafe::17'],
    ['for=192.0.2.60;proto=http;by=203.0.113.43', '192.0.2.60'],
    ['for=192.0.2.60; proto=http; by=203.0.113.43', '192.0.2.60'],
    ['proto=https;for="192.0.2.60";host=example.com', '192.0.2.60'],
    ['host="ex;ample";for=192.0.2.60', '192.0.2.60'],
    ['for="\\1\\9\\2.0.2.60"', '192.0.2.60'],
    [';for=192.0.2.60;', '192.0.2.60'],
    // Not addresses, left for the address parser to refuse:
    ['for=unknown', 'unknown'],
    ['for=_hidden', '_hidden'],
    ['for="_gazonk"', '_gazonk'],
  ])('%j -> %j', (element, expected) => {
    expect(forwardedForNode(element)).toBe(expected);
  });

  it.each([
    ['', 'empty element'],
    ['proto=https;by=203.0.113.43', 'no for'],
    ['for=192.0.2.60;for=198.51.100.17', 'for twice'],
    ['for=192.0.2.60;FOR=198.51.100.17', 'for twice, other case'],
    ['for=[2001:db8::17]', 'unquoted IPv6 (brackets are not token characters)'],
    ['for="2001:db8::17"', 'IPv6 without brackets'],
    ['for="[192.0.2.60]"', 'brackets around IPv4'],
    ['for="[2001:db8::17]:99999"', 'port out of range'],
    ['for="192.0.2.60', 'unterminated quote'],
    ['for="192.0.2.60\\', 'escape at the end'],
    ['for=', 'empty value'],
    ['for=""', 'empty quoted value'],
    ['=192.0.2.60', 'no name'],
    ['for 192.0.2.60', 'no ='],
    ['for=192.0.2.60 proto=http', 'pairs without ;'],
    ['for=192.0.2.60;garbage', 'pair without ='],
    ['for="192.0.2.60\u0000"', 'control character in quoted string'],
    ['for=192.0.2.60\u0007', 'control character after token'],
  ])('refuses %j (%s)', (element) => {
    expect(forwardedForNode(element)).toBeUndefined();
  });
});

describe('hopsFromRight', () => {
  it('yields X-Forwarded-For entries nearest first', () => {
    expect(hops('203.0.113.7, 10.0.0.1,10.0.0.2', 'x-forwarded-for')).toEqual(['10.0.0.2', '10.0.0.1', '203.0.113.7']);
  });

  it('stops after the first empty entry', () => {
    expect(hops('203.0.113.7,,10.0.0.2', 'x-forwarded-for')).toEqual(['10.0.0.2', undefined]);
    expect(hops('10.0.0.2,', 'x-forwarded-for')).toEqual([undefined]);
    expect(hops('', 'x-forwarded-for')).toEqual([undefined]);
  });

  it('yields Forwarded for= nodes nearest first; commas inside quoted strings do not split', () => {
    const value = 'for=192.0.2.43, for="[2001:db8:cafe::17]:4711";host="a,b", for=198.51.100.17;proto=https';
    expect(hops(value, 'forwarded')).toEqual(['198.51.100.17', '2001:db8:cafe::17', '192.0.2.43']);
  });

  it('handles escaped quotes when splitting Forwarded from the right', () => {
    expect(hops('for=192.0.2.1;ext="a\\",b", for=198.51.100.17', 'forwarded')).toEqual(['198.51.100.17', '192.0.2.1']);
    expect(hops('for=192.0.2.1;ext="a\\\\", for=198.51.100.17', 'forwarded')).toEqual(['198.51.100.17', '192.0.2.1']);
  });

  it("reads our proxies' entries even when the client's part has an unterminated quote", () => {
    // The client sent `for="x`; our proxies appended two well-formed elements.
    expect(hops('for="x, for=203.0.113.7, for=10.0.0.1', 'forwarded')).toEqual(['10.0.0.1', '203.0.113.7', undefined]);
  });

  it('treats an element that contains a stray quote as malformed', () => {
    expect(hops('for="x", for=10.0.0.1"', 'forwarded')).toEqual([undefined]);
  });

  it('marks an oversized entry as malformed and stops', () => {
    const long = `for=192.0.2.1;ext="${'a'.repeat(MAX_HOP_LENGTH)}"`;
    expect(hops(`${long}, for=10.0.0.1`, 'forwarded')).toEqual(['10.0.0.1', undefined]);
    expect(hops(`${' '.repeat(MAX_HOP_LENGTH)}203.0.113.7, 10.0.0.1`, 'x-forwarded-for')).toEqual(['10.0.0.1', undefined]);
  });

  it('reads only the rightmost MAX_FORWARDING_HEADER_LENGTH characters of an oversized header', () => {
    const entry = '198.51.100.17, ';
    const filler = entry.repeat(Math.ceil(MAX_FORWARDING_HEADER_LENGTH / entry.length) + 10);
    const result = hops(`${filler}203.0.113.7, 10.0.0.1`, 'x-forwarded-for');
    expect(result.slice(0, 3)).toEqual(['10.0.0.1', '203.0.113.7', '198.51.100.17']);
    // The entry cut by the window is malformed, so the walk ends there instead of reading further left.
    expect(result.at(-1)).toBeUndefined();
    expect(result.length).toBeLessThanOrEqual(Math.ceil(MAX_FORWARDING_HEADER_LENGTH / entry.length) + 2);
  });

  it('reads an entry that begins exactly at the window, then stops at what lies beyond it', () => {
    // 11 + 909 * 9 = MAX_FORWARDING_HEADER_LENGTH: the comma before 203.0.113.7 sits just outside the window.
    const inside = `203.0.113.7${',10.0.0.1'.repeat(909)}`;
    expect(inside.length).toBe(MAX_FORWARDING_HEADER_LENGTH);
    const nearest = Array(909).fill('10.0.0.1');
    expect(hops(`198.51.100.17,${inside}`, 'x-forwarded-for')).toEqual([...nearest, '203.0.113.7', undefined]);
    // Without the comma the entry may go on to the left of the window: cut, so refused.
    expect(hops(`198.51.100.17x${inside}`, 'x-forwarded-for')).toEqual([...nearest, undefined]);
    // 15 + 629 * 13 = MAX_FORWARDING_HEADER_LENGTH, for Forwarded.
    const forwarded = `for=203.0.113.7${',for=10.0.0.1'.repeat(629)}`;
    expect(forwarded.length).toBe(MAX_FORWARDING_HEADER_LENGTH);
    const near = Array(629).fill('10.0.0.1');
    expect(hops(`for=198.51.100.17,${forwarded}`, 'forwarded')).toEqual([...near, '203.0.113.7', undefined]);
    expect(hops(`for=198.51.100.17;${forwarded}`, 'forwarded')).toEqual([...near, undefined]);
  });

  it('reads a header exactly at the bound whole', () => {
    const base = `1.2.3.4${',10.0.0.1'.repeat(909)}`;
    const value = `${' '.repeat(MAX_FORWARDING_HEADER_LENGTH - base.length)}${base}`;
    expect(value.length).toBe(MAX_FORWARDING_HEADER_LENGTH);
    const result = hops(value, 'x-forwarded-for');
    expect(result).toHaveLength(910);
    expect(result.at(-1)).toBe('1.2.3.4');
  });
});
