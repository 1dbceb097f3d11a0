import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compilePolicy } from '../../policy.js';
import { keyName, keyTag, MAX_LITERAL_KEY, policySuffix } from './key-names.js';

/** The text Redis Cluster hashes: between the first `{` and the next `}`, when not empty. */
function hashedPart(name: string): string {
  const open = name.indexOf('{');
  const close = open < 0 ? -1 : name.indexOf('}', open + 1);
  return open >= 0 && close > open + 1 ? name.slice(open + 1, close) : name;
}

describe('keyTag', () => {
  it('uses short brace-free keys as they are', () => {
    expect(keyTag('user:42')).toBe('{user:42}');
    expect(keyTag('ip:2001:db8::/64')).toBe('{ip:2001:db8::/64}');
    expect(keyTag('a b\nc')).toBe('{a b\nc}');
  });

  it('hashes empty, long and brace-carrying keys, marked so a digest never equals a literal key', () => {
    for (const key of ['', '{', '}', '{}', '}{', 'a{b}c', 'x'.repeat(MAX_LITERAL_KEY + 1), 'x'.repeat(10_240)]) {
      const tag = keyTag(key);
      expect(tag).toMatch(/^\{[A-Za-z0-9_-]{22}\}#$/);
    }
    expect(keyTag('x'.repeat(MAX_LITERAL_KEY))).toBe(`{${'x'.repeat(MAX_LITERAL_KEY)}}`);
    // A literal key that looks like a digest still differs from the digest's tag by the marker.
    const digest = keyTag('{}').slice(1, 23);
    expect(keyTag(digest)).not.toBe(keyTag('{}'));
  });

  it('always yields a non-empty hash tag, the same for every policy of a key, distinct per key', () => {
    const a = compilePolicy({ name: 'a', limit: 1, windowMs: 1000 }, 'p', false);
    const b = compilePolicy({ name: 'b{x}', algorithm: 'sliding-log', limit: 1, windowMs: 1000 }, 'p', true);
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), fc.string({ unit: 'binary', maxLength: 300 }), (k1, k2) => {
        const t1 = keyTag(k1);
        const n1 = keyName('tollgate', t1, policySuffix(a));
        const n2 = keyName('tollgate', t1, policySuffix(b));
        expect(hashedPart(n1)).not.toBe(n1);
        expect(hashedPart(n1)).toBe(hashedPart(n2));
        if (k1 !== k2) expect(keyTag(k2)).not.toBe(t1);
      }),
    );
  });
});

describe('policySuffix', () => {
  it('is the storage identity without the role, the role of shadow policies last', () => {
    expect(policySuffix(compilePolicy({ limit: 100, windowMs: 60_000 }, 'p', false))).toBe('default:gcra:100/60000/100');
    expect(policySuffix(compilePolicy({ algorithm: 'fixed-window', limit: 5, windowMs: 1000 }, 'p', true))).toBe(
      'default:fixed-window:5/1000/clock:shadow',
    );
  });

  it('never gives two different policies the same suffix, whatever their names', () => {
    const names = ['x', 'shadow', 'x:shadow', 'shadow:x', 'x:gcra:1/1000/1', 'enforce:x'];
    const seen = new Map<string, string>();
    for (const name of names) {
      for (const shadow of [false, true]) {
        for (const algorithm of ['gcra', 'fixed-window'] as const) {
          const p = compilePolicy({ name, algorithm, limit: 1, windowMs: 1000 }, 'p', shadow);
          const s = policySuffix(p);
          expect(seen.get(s) ?? p.id).toBe(p.id);
          seen.set(s, p.id);
        }
      }
    }
    expect(seen.size).toBe(names.length * 4);
  });
});
