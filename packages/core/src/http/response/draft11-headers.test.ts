import fc from 'fast-check';
import { parseList, serializeByteSequence, serializeList, serializeString } from 'structured-headers';
import { describe, expect, it } from 'vitest';
import { createLimiter } from '../../limiter/create-limiter.js';
import type { PolicyOptions } from '../../types.js';
import { createPartitionKey } from '../keys/partition-key.js';
import { serviceLimitItem } from './draft11-headers.js';
import type { HeaderPair } from './header-values.js';
import { createHeaderWriter } from './header-writer.js';

function setup(policies: PolicyOptions[], pk?: string) {
  let now = 1_800_000_000_000;
  const limiter = createLimiter({ policies, clock: () => now });
  const writer = createHeaderWriter('draft-11', limiter.policies, createPartitionKey(pk === undefined ? false : { secret: pk }, 'pk'));
  return {
    advance: (ms: number) => {
      now += ms;
    },
    async headers(key = 'ip:203.0.113.7', cost?: number): Promise<Record<string, string>> {
      const d = await limiter.check(key, cost === undefined ? undefined : { cost });
      const out: HeaderPair[] = [];
      writer?.write(d, !d.allowed, () => now, out);
      return Object.fromEntries(out);
    },
  };
}

const DEFAULT: PolicyOptions = { name: 'default', algorithm: 'fixed-window', limit: 100, windowMs: 60_000 };

describe('draft-11 headers', () => {
  it('vector A: first request of a fresh window', async () => {
    const s = setup([DEFAULT]);
    expect(await s.headers()).toEqual({ 'RateLimit-Policy': '"default";q=100;w=60', RateLimit: '"default";r=99;t=60' });
  });

  it('vector B: an exhausted policy reports r=0 and t equal to its wait', async () => {
    const s = setup([DEFAULT]);
    for (let i = 0; i < 100; i++) await s.headers();
    s.advance(18_000);
    expect(await s.headers()).toEqual({ 'RateLimit-Policy': '"default";q=100;w=60', RateLimit: '"default";r=0;t=42' });
  });

  it('vectors C and D: two policies; on 429 only the exhausted one is listed', async () => {
    const s = setup([
      { name: 'burst', algorithm: 'fixed-window', limit: 10, windowMs: 1000 },
      { name: 'daily', algorithm: 'fixed-window', limit: 1000, windowMs: 86_400_000 },
    ]);
    const first = await s.headers();
    expect(first['RateLimit-Policy']).toBe('"burst";q=10;w=1, "daily";q=1000;w=86400');
    expect(first.RateLimit).toMatch(/^"burst";r=9;t=1, "daily";r=999;t=\d+$/);
    for (let i = 0; i < 9; i++) await s.headers();
    const limited = await s.headers();
    expect(limited['RateLimit-Policy']).toBe('"burst";q=10;w=1, "daily";q=1000;w=86400');
    expect(limited.RateLimit).toBe('"burst";r=0;t=1');
  });

  it('vector F: qu for non-request units, pk as a keyed HMAC on both fields', async () => {
    const bytes = setup([{ name: 'bytes', algorithm: 'fixed-window', limit: 65_535, windowMs: 10_000, unit: 'content-bytes' }]);
    expect((await bytes.headers())['RateLimit-Policy']).toBe('"bytes";q=65535;qu="content-bytes";w=10');
    const keyed = setup([DEFAULT], 'example-secret');
    const h = await keyed.headers('ip:203.0.113.7');
    expect(h['RateLimit-Policy']).toBe('"default";q=100;w=60;pk=:YzZhlaR+lA/r:');
    expect(h.RateLimit).toBe('"default";r=99;t=60;pk=:YzZhlaR+lA/r:');
  });

  it('escapes policy names through the serializer', async () => {
    const s = setup([{ name: 'a"b\\c', algorithm: 'fixed-window', limit: 5, windowMs: 1500 }]);
    const h = await s.headers();
    expect(h['RateLimit-Policy']).toBe('"a\\"b\\\\c";q=5;w=2');
    expect(parseList(h.RateLimit as string)[0]?.[0]).toBe('a"b\\c');
  });

  it('bucket algorithms: q is the sustained limit, r can exceed it when burst > limit, t is the time to full', async () => {
    const s = setup([{ name: 'tb', algorithm: 'token-bucket', limit: 10, windowMs: 10_000, burst: 20 }]);
    expect(await s.headers()).toEqual({ 'RateLimit-Policy': '"tb";q=10;w=10', RateLimit: '"tb";r=19;t=1' });
    expect((await s.headers(undefined, 2.5)).RateLimit).toBe('"tb";r=16;t=4');
  });

  it('rounds r down and t up for fractional state', async () => {
    const s = setup([{ name: 'g', algorithm: 'gcra', limit: 3, windowMs: 1000 }]);
    expect((await s.headers(undefined, 0.5)).RateLimit).toBe('"g";r=2;t=1');
  });
});

describe('serviceLimitItem', () => {
  it('equals the library serializeList output for any name, r, t and pk', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            name: fc.string({ unit: fc.constantFrom(...' !"#\\azAZ09-_.~'.split('')), minLength: 1, maxLength: 12 }),
            r: fc.nat({ max: 999_999_999_999_999 }),
            t: fc.nat({ max: 999_999_999_999_999 }),
          }),
          { minLength: 1, maxLength: 4 },
        ),
        fc.option(fc.uint8Array({ minLength: 9, maxLength: 9 }), { nil: undefined }),
        (items, pk) => {
          const pkPart = pk === undefined ? '' : `;pk=${serializeByteSequence(pk)}`;
          const fast = items.map((i) => serviceLimitItem(serializeString(i.name), i.r, i.t, pkPart)).join(', ');
          const lib = serializeList(
            items.map((i) => {
              const m = new Map<string, number | Uint8Array>([
                ['r', i.r],
                ['t', i.t],
              ]);
              if (pk !== undefined) m.set('pk', pk);
              return [i.name, m];
            }),
          );
          expect(fast).toBe(lib);
        },
      ),
    );
  });

  it('rejects what the library rejects', () => {
    expect(() => serviceLimitItem('"x"', 1e16, 1, '')).toThrow(/integers/);
  });
});
