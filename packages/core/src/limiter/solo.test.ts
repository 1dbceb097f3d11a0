/**
 * @module The solo path's repeated rejection (solo.ts): a key rejected again in the same ms, while the
 * store changed nothing, gets the same Decision (and `check` the same promise), counted every time; any
 * change of the store, or of the ms, asks the store again.
 */
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../stores/memory-store.js';
import type { Decision } from '../types.js';
import { createLimiter } from './create-limiter.js';

function setup(maxKeys = 1000) {
  const clock = { now: 1_000 };
  const store = new MemoryStore({ sweepIntervalMs: 0, maxKeys });
  const limiter = createLimiter({ policies: { algorithm: 'gcra', limit: 1, windowMs: 10_000 }, store, clock: () => clock.now });
  return { clock, store, limiter };
}

const decide = (l: ReturnType<typeof setup>['limiter'], key: string) => l.decide(key) as Decision;

describe('a rejection answered again on the solo path', () => {
  it('is the same Decision, and the same promise, while the ms and the store stay; every check is counted', async () => {
    const { limiter } = setup();
    expect(decide(limiter, 'a').allowed).toBe(true);
    const first = decide(limiter, 'a');
    expect(first).toMatchObject({ allowed: false, limited: true, retryAfterMs: 10_000, remaining: 0 });
    expect(decide(limiter, 'a')).toBe(first);
    const p = limiter.check('a');
    expect(limiter.check('a')).toBe(p);
    expect(await p).toBe(first);
    expect(limiter.stats()).toMatchObject({ requests: 5, limited: 4 });
  });

  it('is decided again when the ms moves', () => {
    const { clock, limiter } = setup();
    decide(limiter, 'a');
    const first = decide(limiter, 'a');
    clock.now += 1;
    const later = decide(limiter, 'a');
    expect(later).not.toBe(first);
    expect(later.retryAfterMs).toBe(9_999);
  });

  it('is decided again after another key is charged, a refund, a reset or a general-path check', async () => {
    const { store, limiter } = setup();
    const charged = decide(limiter, 'a');
    const first = decide(limiter, 'a');
    const changes = [
      () => limiter.decide('b'),
      () => limiter.decide('a', { cost: 2 }),
      () => store.sweep(),
      () => limiter.refund(decide(limiter, 'c')),
    ];
    let last = first;
    for (const change of changes) {
      await change();
      const again = decide(limiter, 'a');
      expect(again).not.toBe(last);
      expect(JSON.stringify(again)).toBe(JSON.stringify(first));
      last = again;
    }
    await limiter.refund(charged);
    expect(decide(limiter, 'a').allowed).toBe(true);
    await limiter.reset('a');
    expect(decide(limiter, 'a').allowed).toBe(true);
  });

  it('is decided again when an eviction took the key: the key starts afresh', () => {
    const { limiter } = setup(1);
    decide(limiter, 'a');
    expect(decide(limiter, 'a').allowed).toBe(false);
    // One row: admitting b evicts a.
    expect(decide(limiter, 'b').allowed).toBe(true);
    expect(decide(limiter, 'a').allowed).toBe(true);
  });

  it('is decided again after a sweep purged the key at a later time the store saw (the clock stepped back)', () => {
    const { clock, store, limiter } = setup();
    // A second limiter on the store, whose key x stays over its limit for a long time.
    const other = createLimiter({ policies: { algorithm: 'gcra', limit: 1, windowMs: 1_000_000 }, store, clock: () => clock.now });
    expect((other.decide('x') as Decision).allowed).toBe(true);
    decide(limiter, 'a');
    expect(decide(limiter, 'a').allowed).toBe(false);
    // The store sees a later time through a rejection (nothing charged), then purges what expired by then: a.
    clock.now = 50_000;
    expect((other.decide('x') as Decision).allowed).toBe(false);
    store.sweep();
    clock.now = 1_000;
    expect(decide(limiter, 'a').allowed).toBe(true);
  });
});

describe('options of null (from JavaScript)', () => {
  it('are no options on the solo path, as on the general one: not a TypeError', async () => {
    const { limiter } = setup();
    const none = null as unknown as undefined;
    expect(limiter.decide('a', none)).toMatchObject({ allowed: true });
    await expect(limiter.check('a', none)).resolves.toMatchObject({ allowed: false });
    const two = createLimiter({
      policies: [
        { limit: 1, windowMs: 10_000 },
        { name: 'day', limit: 10, windowMs: 86_400_000 },
      ],
      store: new MemoryStore({ sweepIntervalMs: 0 }),
    });
    await expect(two.check('a', none)).resolves.toMatchObject({ allowed: true });
  });
});
