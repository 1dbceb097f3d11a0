import { describe, expect, it } from 'vitest';
import { readRateLimitSignal, readRetryAfter, serverWaitMs } from './rate-limit-signal.js';

const NOW = Date.parse('2026-12-02T04:00:00Z');
const h = (init: Record<string, string>) => new Headers(init);

describe('readRetryAfter', () => {
  it('reads delay-seconds and HTTP-dates (against the Date field when there is one)', () => {
    expect(readRetryAfter(h({ 'retry-after': '42' }), NOW)).toBe(42_000);
    expect(readRetryAfter(h({ 'retry-after': '0' }), NOW)).toBe(0);
    expect(readRetryAfter(h({ 'retry-after': 'Wed, 02 Dec 2026 04:00:10 GMT' }), NOW)).toBe(10_000);
    // The server's clock is 5 s behind ours: the date is 10 s after the server's Date, so wait 10 s, not 5.
    expect(readRetryAfter(h({ 'retry-after': 'Wed, 02 Dec 2026 04:00:05 GMT', date: 'Wed, 02 Dec 2026 03:59:55 GMT' }), NOW)).toBe(10_000);
    expect(readRetryAfter(h({ 'retry-after': 'Wed, 02 Dec 2026 03:00:00 GMT' }), NOW)).toBe(0);
  });

  it('reads any number of digits: leading zeros, and values past 2^53 as the long waits they are', () => {
    expect(readRetryAfter(h({ 'retry-after': '0000000000000030' }), NOW)).toBe(30_000);
    expect(readRetryAfter(h({ 'retry-after': '1000000000000000' }), NOW)).toBe(1e18);
    expect(readRetryAfter(h({ 'retry-after': '9'.repeat(400) }), NOW)).toBe(Number.POSITIVE_INFINITY);
  });

  it('reads an asctime date in UTC, not in the machine time zone', () => {
    const zone = process.env.TZ;
    try {
      // Node takes a TZ set at run time for its later local-time calls.
      for (const tz of ['Asia/Tokyo', 'America/Los_Angeles', 'UTC']) {
        process.env.TZ = tz;
        expect(readRetryAfter(h({ 'retry-after': 'Wed Dec  2 04:00:10 2026' }), NOW), tz).toBe(10_000);
      }
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });

  it('a Retry-After that is not one leaves the wait to RateLimit', () => {
    const headers = h({ 'retry-after': 'in 2', ratelimit: '"default";r=0;t=2' });
    expect(serverWaitMs(readRateLimitSignal(headers, NOW))).toBe(2_000);
  });

  it('several Retry-After lines (joined with ", "): the longest wait, seconds or dates alike', () => {
    const joined = (...values: string[]) => {
      const headers = new Headers();
      for (const v of values) headers.append('retry-after', v);
      return readRetryAfter(headers, NOW);
    };
    expect(joined('2', '2')).toBe(2_000);
    expect(joined('2', '7', '3')).toBe(7_000);
    expect(joined('Wed, 02 Dec 2026 04:00:10 GMT', 'Wed, 02 Dec 2026 04:00:20 GMT')).toBe(20_000);
    // Seconds and dates mixed (a proxy's line beside the server's): the longest still (before: none).
    expect(joined('2', 'Wed, 02 Dec 2026 04:00:10 GMT')).toBe(10_000);
    expect(joined('120', 'Wed, 02 Dec 2026 04:01:00 GMT')).toBe(120_000);
    expect(joined('Wed, 02 Dec 2026 04:00:10 GMT', '30', 'Wed, 02 Dec 2026 04:00:20 GMT')).toBe(30_000);
    expect(joined('2', 'soon')).toBeUndefined();
    expect(joined('Wed, 02 Dec 2026 04:00:10 GMT', 'soon')).toBeUndefined();
  });

  it('ignores what is neither', () => {
    for (const bad of ['-1', '1.5', 'soon', '', ' 2 3', 'in 5', 'x 5', 'a 1', 'May 1', '5 z', 'Wed, 31 Apr 2026 04:00:10 GMT'])
      expect(readRetryAfter(h({ 'retry-after': bad }), NOW), bad).toBeUndefined();
    expect(readRetryAfter(h({}), NOW)).toBeUndefined();
  });
});

describe('readRateLimitSignal', () => {
  it('draft-11: the most restrictive item, with its quota from RateLimit-Policy', () => {
    const s = readRateLimitSignal(
      h({
        'ratelimit-policy': '"burst";q=10;w=1, "daily";q=1000;w=86400',
        ratelimit: '"burst";r=0;t=1, "daily";r=871;t=43200',
        'retry-after': '1',
      }),
      NOW,
    );
    expect(s).toMatchObject({ retryAfterMs: 1000, remaining: 0, resetMs: 1000, limit: 10, dialect: 'draft-11' });
    expect(serverWaitMs(s)).toBe(1000);
  });

  it('draft-11: every item, each with its quota, window and partition key (pk on the item, else on its policy)', () => {
    const s = readRateLimitSignal(
      h({
        'ratelimit-policy': '"burst";q=10;w=1, "daily";q=1000;w=86400;pk=:YzZhlaR+lA/r:',
        ratelimit: '"burst";r=4;t=1;pk=:AQID:, "daily";r=871;t=43200',
      }),
      NOW,
    );
    expect(s.policies).toEqual([
      { name: 'burst', partition: 'AQID', remaining: 4, resetMs: 1_000, limit: 10, windowMs: 1_000 },
      { name: 'daily', partition: 'YzZhlaR+lA/r', remaining: 871, resetMs: 43_200_000, limit: 1000, windowMs: 86_400_000 },
    ]);
    // express-rate-limit's draft-8: pk on RateLimit-Policy only, Tokens, spaces after ';'.
    const erl = readRateLimitSignal(
      h({ ratelimit: '"2-in-1min"; r=1; t=60', 'ratelimit-policy': '"2-in-1min"; q=2; w=60; pk=:MTJjYTE3YjQ5YWYy:' }),
      NOW,
    );
    expect(erl.policies).toEqual([
      { name: '2-in-1min', partition: 'MTJjYTE3YjQ5YWYy', remaining: 1, resetMs: 60_000, limit: 2, windowMs: 60_000 },
    ]);
    // GitHub's X-RateLimit-Resource names the legacy fields' policy.
    const gh = readRateLimitSignal(h({ 'x-ratelimit-remaining': '29', 'x-ratelimit-limit': '30', 'x-ratelimit-resource': 'search' }), NOW);
    expect(gh.policies).toEqual([
      { name: 'search', partition: undefined, remaining: 29, resetMs: undefined, limit: 30, windowMs: undefined },
    ]);
  });

  it('draft-11: a tie on r goes to the longer t; Tokens and spaces after ";" are accepted (express-rate-limit draft-8)', () => {
    const s = readRateLimitSignal(h({ ratelimit: '"a";r=0;t=2, b; r=0; t=60', 'ratelimit-policy': '"2-in-1min"; q=2; w=60' }), NOW);
    expect(s).toMatchObject({ remaining: 0, resetMs: 60_000, limit: undefined, dialect: 'draft-11' });
    // Without Retry-After, the exhausted policy's t is the wait.
    expect(serverWaitMs(s)).toBe(60_000);
  });

  it('draft-11: a malformed field is ignored whole', () => {
    expect(readRateLimitSignal(h({ ratelimit: '"default" ;r=1;t=5' }), NOW).dialect).toBeUndefined();
    expect(readRateLimitSignal(h({ ratelimit: '"default";r=-1;t=5' }), NOW).dialect).toBeUndefined();
    expect(readRateLimitSignal(h({ ratelimit: '"default";r=1.5;t=5' }), NOW).dialect).toBeUndefined();
    // The must-reject vectors of the reference: a Decimal (which the parser reads as the number it names),
    // and one bad item beside good ones: the whole field goes, never the friendlier items alone.
    for (const ratelimit of [
      '"default";r=10.0;t=5',
      '"default";r=1;t=5.0',
      '"a";r=5, "b";r=1.5;t=3',
      '"a";r=5, "b";t=3',
      '"a";r=5, "b";r=1;t=-3',
      '"a";r=5, ("b" "c");r=1',
    ])
      expect(readRateLimitSignal(h({ ratelimit }), NOW).dialect, ratelimit).toBeUndefined();
  });

  it('draft-11: a String parameter is a comment, whatever its text (c="x;r=1.5" is no Decimal r)', () => {
    const s = readRateLimitSignal(h({ ratelimit: '"default";r=0;t=5;c="x;r=1.5"' }), NOW);
    expect(s).toMatchObject({ remaining: 0, resetMs: 5_000, dialect: 'draft-11' });
    expect(readRateLimitSignal(h({ ratelimit: '"a;r=1.5";r=3;t=5' }), NOW)).toMatchObject({ remaining: 3, dialect: 'draft-11' });
    expect(readRateLimitSignal(h({ ratelimit: '"default";c="\\"";r=1.5;t=5' }), NOW).dialect).toBeUndefined();
  });

  it('a response a cache served (Age above 0) says nothing of the quota, only its Retry-After (draft-11 section 7.3)', () => {
    const quota = { ratelimit: '"default";r=0;t=60', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '60' };
    expect(readRateLimitSignal(h({ ...quota, age: '300' }), NOW)).toMatchObject({ remaining: undefined, dialect: undefined, policies: [] });
    expect(readRateLimitSignal(h({ ...quota, age: '300', 'retry-after': '7' }), NOW).retryAfterMs).toBe(7_000);
    expect(readRateLimitSignal(h({ ...quota, age: '0' }), NOW)).toMatchObject({ remaining: 0, dialect: 'draft-11' });
  });

  it('draft-11: a name twice (stacked express-rate-limit middlewares with one limit and window) is read, the least remaining first', () => {
    const s = readRateLimitSignal(h({ ratelimit: '"100-in-1min"; r=99; t=60, "100-in-1min"; r=0; t=30' }), NOW);
    expect(s).toMatchObject({ remaining: 0, resetMs: 30_000, dialect: 'draft-11' });
  });

  it('draft-7: the RateLimit dictionary', () => {
    expect(readRateLimitSignal(h({ ratelimit: 'limit=100, remaining=0, reset=5', 'ratelimit-policy': '100;w=60' }), NOW)).toEqual({
      retryAfterMs: undefined,
      remaining: 0,
      resetMs: 5000,
      limit: 100,
      dialect: 'draft-7',
      policies: [{ name: '', partition: undefined, remaining: 0, resetMs: 5000, limit: 100, windowMs: 60_000 }],
    });
  });

  it('draft-6: RateLimit-Remaining / -Reset / -Limit', () => {
    expect(readRateLimitSignal(h({ 'ratelimit-limit': '2', 'ratelimit-remaining': '1', 'ratelimit-reset': '60' }), NOW)).toEqual({
      retryAfterMs: undefined,
      remaining: 1,
      resetMs: 60_000,
      limit: 2,
      dialect: 'draft-6',
      policies: [{ name: '', partition: undefined, remaining: 1, resetMs: 60_000, limit: 2, windowMs: undefined }],
    });
  });

  it('legacy X-RateLimit-*: reset in epoch seconds (against Date), epoch ms, or delta seconds', () => {
    const epoch = readRateLimitSignal(
      h({
        'x-ratelimit-limit': '5',
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': String(NOW / 1000 + 7),
        date: new Date(NOW).toUTCString(),
      }),
      NOW + 3_000,
    );
    expect(epoch).toMatchObject({ retryAfterMs: undefined, remaining: 0, resetMs: 7_000, limit: 5, dialect: 'legacy' });
    expect(readRateLimitSignal(h({ 'x-ratelimit-remaining': '3', 'x-ratelimit-reset': String(NOW + 2_500) }), NOW).resetMs).toBe(2_500);
    expect(readRateLimitSignal(h({ 'x-ratelimit-remaining': '3', 'x-ratelimit-reset': '30' }), NOW).resetMs).toBe(30_000);
  });

  it('nothing at all: only what Retry-After says', () => {
    expect(readRateLimitSignal(h({}), NOW)).toEqual({
      retryAfterMs: undefined,
      remaining: undefined,
      resetMs: undefined,
      limit: undefined,
      dialect: undefined,
      policies: [],
    });
    expect(serverWaitMs(readRateLimitSignal(h({ 'retry-after': '3' }), NOW))).toBe(3000);
    // Quota left: no wait is named even if a reset is.
    expect(serverWaitMs(readRateLimitSignal(h({ ratelimit: '"d";r=4;t=9' }), NOW))).toBeUndefined();
  });
});
