import { describe, expect, it } from 'vitest';
import { createLimiter } from '../../limiter/create-limiter.js';
import type { HeaderMode } from './header-mode.js';
import type { HeaderPair } from './header-values.js';
import { createHeaderWriter } from './header-writer.js';

/** express-rate-limit 8.7.5, limit 2 per 60 s, three requests (http-spec.md section 2). */
async function run(mode: HeaderMode): Promise<Record<string, string>[]> {
  const now = 1_795_960_801_000;
  const limiter = createLimiter({
    policies: { algorithm: 'fixed-window', limit: 2, windowMs: 60_000, anchor: 'first-request' },
    clock: () => now,
  });
  const writer = createHeaderWriter(mode, limiter.policies, undefined);
  const out: Record<string, string>[] = [];
  for (let i = 0; i < 3; i++) {
    const d = await limiter.check('ip:127.0.0.1');
    const h: HeaderPair[] = [];
    writer?.write(d, !d.allowed, () => now, h);
    out.push(Object.fromEntries(h));
  }
  return out;
}

describe('express-rate-limit compatible formats', () => {
  it('draft-6', async () => {
    expect(await run('draft-6')).toEqual([
      { 'RateLimit-Policy': '2;w=60', 'RateLimit-Limit': '2', 'RateLimit-Remaining': '1', 'RateLimit-Reset': '60' },
      { 'RateLimit-Policy': '2;w=60', 'RateLimit-Limit': '2', 'RateLimit-Remaining': '0', 'RateLimit-Reset': '60' },
      { 'RateLimit-Policy': '2;w=60', 'RateLimit-Limit': '2', 'RateLimit-Remaining': '0', 'RateLimit-Reset': '60' },
    ]);
  });

  it('draft-7', async () => {
    const [first, , third] = await run('draft-7');
    expect(first).toEqual({ 'RateLimit-Policy': '2;w=60', RateLimit: 'limit=2, remaining=1, reset=60' });
    expect(third).toEqual({ 'RateLimit-Policy': '2;w=60', RateLimit: 'limit=2, remaining=0, reset=60' });
  });

  it('legacy: X-RateLimit-Reset is Unix epoch seconds', async () => {
    const [, , third] = await run('legacy');
    expect(third).toEqual({
      'X-RateLimit-Limit': '2',
      'X-RateLimit-Remaining': '0',
      Date: 'Sun, 29 Nov 2026 14:00:01 GMT',
      'X-RateLimit-Reset': '1795960861',
    });
  });

  it('false writes nothing', () => {
    expect(createHeaderWriter(false, [], undefined)).toBeUndefined();
  });
});
