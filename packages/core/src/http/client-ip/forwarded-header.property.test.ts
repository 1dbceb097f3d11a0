/**
 * Differential property tests: the forwarding-header reader (forwarded-header.ts) against the reader as
 * first written (forwarded-header-reference.ts), on header values made of the characters and tokens
 * that matter to it: separators, quotes, escapes, brackets, ports, parameter names in any case, OWS,
 * obs-text and controls, up to past the length bounds.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hopsFromRight } from '../../testing/client-address.js';
import { referenceForwardedForNode, referenceHopsFromRight, referenceXForwardedForNode } from '../../testing/forwarded-header-reference.js';
import { type ForwardingHeader, forwardedForNode, MAX_HOP_LENGTH, xForwardedForNode } from './forwarded-header.js';

const RUNS = { numRuns: 3000 };

const token = fc.constantFrom(
  'for=',
  'For=',
  'FOR=',
  'by=',
  'proto=https',
  'host=',
  ';',
  ',',
  ', ',
  ' ',
  '\t',
  '"',
  '\\',
  '\\"',
  '\\\\',
  '[',
  ']',
  ':',
  '::',
  ':443',
  ':99999',
  ':_obf',
  '=',
  '203.0.113.7',
  '10.0.0.1',
  '2001:db8::1',
  '::ffff:1.2.3.4',
  'unknown',
  '_hidden',
  'a',
  '\u00e9',
  '\u0001',
  '\u007f',
);
const soup = fc.array(token, { maxLength: 24 }).map((t) => t.join(''));
const ows = fc.constantFrom('', '', ' ', '\t', '  ');
const port = fc.constantFrom('', ':443', ':0', ':65535', ':65536', ':99999', ':_obf', ':', ':8x');
const node = fc.oneof(
  fc.tuple(fc.constantFrom('203.0.113.7', '10.0.0.1', '1.2.3', '1234567', '0x7f.0.0.1'), port).map(([a, p]) => a + p),
  fc.tuple(fc.constantFrom('[2001:db8::1]', '[::ffff:1.2.3.4]', '[1.2.3.4]', '[2001:db8::1', '[]'), port).map(([a, p]) => a + p),
  fc.constantFrom('2001:db8::1', '::1', 'unknown', '_hidden', '', 'a:b:c', 'fe80::1%eth0'),
);
/** Quoted-string content: characters, escapes, and the delimiters that must not end the string. */
const quoted = fc
  .array(fc.oneof(node, fc.constantFrom('\\1', '\\"', '\\\\', ',', ';', '=', ' ', '\u00e9', '\u0001', 'x')), { maxLength: 4 })
  .map((parts) => `"${parts.join('')}"`);
const pair = fc
  .tuple(
    fc.constantFrom('for', 'For', 'FOR', 'by', 'proto', 'host', 'x-y', ''),
    fc.oneof(
      node,
      node.map((n) => `"${n}"`),
      quoted,
      fc.constant('https'),
    ),
  )
  .map(([name, v]) => `${name}=${v}`);
const element = fc
  .tuple(ows, fc.array(pair, { minLength: 1, maxLength: 3 }), fc.constantFrom(';', '; ', ' ;', ';;'), ows)
  .map(([l, pairs, sep, r]) => `${l}${pairs.join(sep)}${r}`);
const entry = fc.tuple(ows, node, ows).map(([l, n, r]) => `${l}${n}${r}`);
const joined = (part: fc.Arbitrary<string>) =>
  fc.tuple(fc.array(part, { minLength: 1, maxLength: 4 }), fc.constantFrom(',', ', ', ' , ')).map(([parts, sep]) => parts.join(sep));

const value = fc.oneof(
  { weight: 4, arbitrary: joined(element) },
  { weight: 4, arbitrary: joined(entry) },
  { weight: 3, arbitrary: soup },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.array(token, { maxLength: 6 }),
        fc.integer({ min: MAX_HOP_LENGTH - 3, max: MAX_HOP_LENGTH + 3 }),
        fc.constantFrom('a', ' ', '"'),
      )
      .map(([t, n, c]) => `${t.join('')}${c.repeat(n)}${t.join('')}`),
  },
);
const single = fc.oneof(element, entry, soup);

describe.each<ForwardingHeader>(['x-forwarded-for', 'forwarded'])('the %s reader agrees with the reference', (format) => {
  it('yields the same hops', () => {
    fc.assert(
      fc.property(value, (text) => {
        expect([...hopsFromRight(text, format)]).toEqual([...referenceHopsFromRight(text, format)]);
      }),
      RUNS,
    );
  });

  it('reads one entry or element alike', () => {
    fc.assert(
      fc.property(single, (text) => {
        if (format === 'forwarded') expect(forwardedForNode(text)).toBe(referenceForwardedForNode(text));
        else expect(xForwardedForNode(text)).toBe(referenceXForwardedForNode(text));
      }),
      RUNS,
    );
  });
});
