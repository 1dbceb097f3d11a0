import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sha256 } from '../../internal/text.js';
import { MAX_ID_LENGTH, namespacedKey } from './namespaced-key.js';

describe('namespacedKey', () => {
  it.each([
    ['42', 'user:42'],
    ['alice@example.com', 'user:alice@example.com'],
    ['a:b/c', 'user:a:b/c'],
    ['a b', 'user:a%20b'],
    ['a\nb', 'user:a%0Ab'],
    ['a\r\nSet-Cookie: x', 'user:a%0D%0ASet-Cookie:%20x'],
    ['\u0000', 'user:%00'],
    ['\u001b[31mred', 'user:%1B[31mred'],
    ['100%', 'user:100%25'],
    ['#1', 'user:%231'],
    ['{tag}', 'user:%7Btag%7D'],
    ['josé', 'user:jos%C3%A9'],
    ['😀', 'user:%F0%9F%98%80'],
  ])('%j -> %s', (id, expected) => {
    expect(namespacedKey('user', id)).toBe(expected);
  });

  it('hashes ids whose readable form is too long, never truncating them', () => {
    const long = 'x'.repeat(MAX_ID_LENGTH + 1);
    expect(namespacedKey('user', 'x'.repeat(MAX_ID_LENGTH))).toBe(`user:${'x'.repeat(MAX_ID_LENGTH)}`);
    expect(namespacedKey('user', long)).toBe(`user:#${createHash('sha256').update(long).digest('base64url')}`);
    expect(namespacedKey('user', `${long}y`)).not.toBe(namespacedKey('user', long));
    // 50 characters that each encode to 6: readable form 300 long, so hashed.
    expect(namespacedKey('tenant', 'é'.repeat(50))).toMatch(/^tenant:#[A-Za-z0-9_-]{43}$/);
  });

  it('is injective and bounded: different ids never share a key, and no key is long', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 200 }),
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 200 }),
        (a, b) => {
          const ka = namespacedKey('user', a);
          expect(ka.length).toBeLessThanOrEqual('user:'.length + MAX_ID_LENGTH);
          expect(ka).toMatch(/^user:[\x21-\x7e]+$/);
          if (a !== b) expect(namespacedKey('user', b)).not.toBe(ka);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('keeps a readable id apart from a digest that looks like it', () => {
    const long = 'x'.repeat(MAX_ID_LENGTH + 1);
    const hashed = namespacedKey('user', long);
    const lookalike = hashed.slice('user:'.length);
    expect(namespacedKey('user', lookalike)).not.toBe(hashed);
    expect(namespacedKey('user', sha256(long))).not.toBe(hashed);
  });
});
