import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compilePolicy } from '../../policy.js';
import type { AlgorithmId, PolicyOptions } from '../../types.js';
import { keySlot } from './cluster-slot.js';
import { keyHead, keyName, keyTag, MAX_LITERAL_KEY, markName, nodeMarkName, policySuffix, raisesName, restoredName } from './key-names.js';

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
        const n1 = keyName(keyHead('tollgate', undefined), t1, policySuffix(a));
        const n2 = keyName(keyHead('tollgate', undefined), t1, policySuffix(b));
        expect(hashedPart(n1)).not.toBe(n1);
        expect(hashedPart(n1)).toBe(hashedPart(n2));
        if (k1 !== k2) expect(keyTag(k2)).not.toBe(t1);
      }),
    );
  });
});

describe('keyHead', () => {
  it('keeps the names of a limiter without a name, and puts a named limiter before the hash tag', () => {
    const suffix = policySuffix(compilePolicy({ name: 'login', algorithm: 'fixed-window', limit: 5, windowMs: 900_000 }, 'p', false));
    expect(keyName(keyHead('tg', undefined), keyTag('ip:10.1.2.3'), suffix)).toBe('tg:v2:{ip:10.1.2.3}:login:fw15m');
    const named = keyName(keyHead('tg', 'auth'), keyTag('ip:10.1.2.3'), suffix);
    expect(named).toBe('tg:v2:auth:{ip:10.1.2.3}:login:fw15m');
    expect(hashedPart(named)).toBe('ip:10.1.2.3');
  });

  it('never gives two (prefix, limiter name) pairs the same head when names have no colon', () => {
    const name = fc.option(fc.stringMatching(/^[!-9;-z|~]{1,8}$/), { nil: undefined });
    const prefix = fc.stringMatching(/^[a-z:]{1,8}$/);
    fc.assert(
      fc.property(prefix, name, name, (p, n1, n2) => {
        if (n1 !== n2) expect(keyHead(p, n1)).not.toBe(keyHead(p, n2));
      }),
    );
  });
});

describe('markName', () => {
  it('is the head and ~alive: one per limiter name, never a key of state', () => {
    expect(markName('tg', undefined)).toBe('tg:v2:~alive');
    expect(markName('tg', 'auth')).toBe('tg:v2:auth:~alive');
    const name = fc.option(fc.stringMatching(/^[!-9;-z|~]{1,8}$/), { nil: undefined });
    fc.assert(
      fc.property(name, name, fc.string(), (n1, n2, key) => {
        const suffix = policySuffix(compilePolicy({ limit: 5, windowMs: 60_000 }, 'p', false));
        expect(markName('tg', n1)).not.toBe(keyName(keyHead('tg', n2), keyTag(key), suffix));
        if (n1 !== n2) expect(markName('tg', n1)).not.toBe(markName('tg', n2));
      }),
    );
  });
});

describe('nodeMarkName', () => {
  it("is the limiter's mark with a hash tag of its own: one per limiter and tag, never the single mark or a key of state", () => {
    expect(nodeMarkName('tg', 'auth', 7)).toBe('tg:v2:auth:~alive{7}');
    expect(keySlot(nodeMarkName('tg', 'auth', 7))).toBe(keySlot('7'));
    const name = fc.option(fc.stringMatching(/^[!-9;-z|~]{1,8}$/), { nil: undefined });
    const n = fc.nat(1 << 16);
    fc.assert(
      fc.property(name, name, n, n, fc.string(), (l1, l2, i, j, key) => {
        const suffix = policySuffix(compilePolicy({ limit: 5, windowMs: 60_000 }, 'p', false));
        const mark = nodeMarkName('tg', l1, i);
        expect(mark).not.toBe(keyName(keyHead('tg', l2), keyTag(key), suffix));
        expect(mark).not.toBe(markName('tg', l2));
        if (l1 !== l2 || i !== j) expect(mark).not.toBe(nodeMarkName('tg', l2, j));
      }),
    );
  });
});

describe('policySuffix', () => {
  it('is short: name (none for the default), algorithm code, window in its largest unit, and only what differs from the defaults', () => {
    const at = (o: PolicyOptions, shadow = false) => policySuffix(compilePolicy(o, 'p', shadow));
    expect(at({ limit: 100, windowMs: 60_000 })).toBe('gc1m');
    expect(at({ limit: 1000, windowMs: 86_400_000 })).toBe('gc1d');
    expect(at({ algorithm: 'leaky-bucket', limit: 100, windowMs: 60_000, burst: 20 })).toBe('lb1m');
    expect(at({ name: 'burst', algorithm: 'token-bucket', limit: 100, windowMs: 1000, burst: 20 })).toBe('burst:tb1s');
    expect(at({ name: 'odd', algorithm: 'sliding-window', limit: 3, windowMs: 333 })).toBe('odd:sw333');
    expect(at({ name: 'login', algorithm: 'fixed-window', limit: 5, windowMs: 900_000, anchor: 'first-request' }, true)).toBe(
      'login:fw15m/first:s',
    );
    expect(at({ algorithm: 'sliding-log', limit: 5, windowMs: 7_200_000 }, true)).toBe('sl2h:s');
  });

  it('keeps the bench key of one gcra policy (1000 per day) within 30 characters, the smallest allocation', () => {
    const name = keyName(
      keyHead('tg', undefined),
      keyTag('ip:10.1.255.255'),
      policySuffix(compilePolicy({ limit: 1000, windowMs: 86_400_000 }, 'p', false)),
    );
    expect(name).toBe('tg:v2:{ip:10.1.255.255}:gc1d');
    expect(name.length).toBeLessThanOrEqual(30);
  });

  it('agrees with the storage identity: equal suffixes exactly for equal policy ids, whatever the names', () => {
    const policy = fc.record({
      name: fc.constantFrom('x', 's', 'x:s', 's:x', 'default', 'gc1s', 'gc1s:s', 'x:gc1s', 'x:gc1s:s', 'a:fw1s/first', 'fw1s/first'),
      algorithm: fc.constantFrom(
        'fixed-window',
        'sliding-window',
        'sliding-log',
        'token-bucket',
        'gcra',
        'leaky-bucket',
      ) as fc.Arbitrary<AlgorithmId>,
      limit: fc.integer({ min: 1, max: 3 }),
      windowMs: fc.constantFrom(1000, 10_000, 60_000, 60, 1),
      burst: fc.integer({ min: 1, max: 3 }),
      anchor: fc.constantFrom<'clock' | 'first-request'>('clock', 'first-request'),
      delayAfter: fc.integer({ min: 0, max: 2 }),
      shadow: fc.boolean(),
    });
    const compile = (r: typeof policy extends fc.Arbitrary<infer T> ? T : never) => {
      const bucket = r.algorithm === 'token-bucket' || r.algorithm === 'gcra' || r.algorithm === 'leaky-bucket';
      return compilePolicy(
        {
          name: r.name,
          algorithm: r.algorithm,
          limit: r.limit,
          windowMs: r.windowMs,
          ...(bucket ? { burst: r.burst } : {}),
          ...(r.algorithm === 'fixed-window' ? { anchor: r.anchor } : {}),
          ...(r.algorithm === 'leaky-bucket' ? { delayAfter: r.delayAfter } : {}),
        },
        'p',
        r.shadow,
      );
    };
    fc.assert(
      fc.property(policy, policy, (a, b) => {
        const [p, q] = [compile(a), compile(b)];
        expect(policySuffix(p) === policySuffix(q)).toBe(p.id === q.id);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('restoredName and raisesName', () => {
  it("are the ledger of one key of state and its raises, in that state's slot: never a key of state, a mark, or another key's ledger", () => {
    expect(restoredName(keyHead('tg', 'auth'), keyTag('ip:1'), 'fw1m')).toBe('tg:v2:auth:~restored{ip:1}:fw1m');
    expect(raisesName(keyHead('tg', 'auth'), keyTag('ip:1'), 'fw1m')).toBe('tg:v2:auth:~raises{ip:1}:fw1m');
    const name = fc.option(fc.stringMatching(/^[!-9;-z|~]{1,8}$/), { nil: undefined });
    const suffix = policySuffix(compilePolicy({ limit: 5, windowMs: 60_000 }, 'p', false));
    fc.assert(
      fc.property(name, name, fc.string(), fc.string(), fc.nat(1 << 16), (l1, l2, k1, k2, n) => {
        const ledger = restoredName(keyHead('tg', l1), keyTag(k1), suffix);
        expect(keySlot(ledger)).toBe(keySlot(keyName(keyHead('tg', l1), keyTag(k1), suffix)));
        expect(ledger).not.toBe(keyName(keyHead('tg', l2), keyTag(k2), suffix));
        expect(ledger).not.toBe(markName('tg', l2));
        expect(ledger).not.toBe(nodeMarkName('tg', l2, n));
        if (l1 !== l2 || keyTag(k1) !== keyTag(k2)) expect(ledger).not.toBe(restoredName(keyHead('tg', l2), keyTag(k2), suffix));
        // The raises beside it: in the same slot, and never any of those, nor another ledger.
        const raises = raisesName(keyHead('tg', l1), keyTag(k1), suffix);
        expect(keySlot(raises)).toBe(keySlot(ledger));
        expect(raises).not.toBe(keyName(keyHead('tg', l2), keyTag(k2), suffix));
        expect(raises).not.toBe(restoredName(keyHead('tg', l2), keyTag(k2), suffix));
        expect(raises).not.toBe(markName('tg', l2));
        expect(raises).not.toBe(nodeMarkName('tg', l2, n));
      }),
    );
  });
});
