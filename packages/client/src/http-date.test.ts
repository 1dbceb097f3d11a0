import { describe, expect, it } from 'vitest';
import { parseHttpDate } from './http-date.js';

const NOW = Date.parse('2026-12-02T04:00:00Z');

describe('parseHttpDate', () => {
  it('reads the three forms of RFC 9110 section 5.6.7, all in UTC', () => {
    const t = Date.UTC(1994, 10, 6, 8, 49, 37);
    expect(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT', NOW)).toBe(t);
    expect(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT', NOW)).toBe(t);
    expect(parseHttpDate('Sun Nov  6 08:49:37 1994', NOW)).toBe(t);
    expect(parseHttpDate('Wed Dec 02 04:00:10 2026', NOW)).toBe(NOW + 10_000);
    expect(parseHttpDate('  Wed, 02 Dec 2026 04:00:10 GMT ', NOW)).toBe(NOW + 10_000);
  });

  it('reads asctime in UTC whatever the machine time zone (Date.parse takes it as local time)', () => {
    // The zone cannot be changed inside the process; the parse uses no local-time call at all.
    const asctime = 'Fri Dec  4 05:15:05 2026';
    expect(parseHttpDate(asctime, NOW)).toBe(Date.UTC(2026, 11, 4, 5, 15, 5));
  });

  it('places an RFC 850 two-digit year at most 50 years ahead of now', () => {
    expect(new Date(parseHttpDate('Monday, 01-Jan-76 00:00:00 GMT', NOW)).getUTCFullYear()).toBe(2076);
    expect(new Date(parseHttpDate('Monday, 01-Jan-77 00:00:00 GMT', NOW)).getUTCFullYear()).toBe(1977);
    expect(new Date(parseHttpDate('Monday, 01-Jan-26 00:00:00 GMT', NOW)).getUTCFullYear()).toBe(2026);
  });

  it('takes a leap second as the second after', () => {
    expect(parseHttpDate('Wed, 31 Dec 2025 23:59:60 GMT', NOW)).toBe(Date.UTC(2026, 0, 1, 0, 0, 0));
  });

  it('is NaN for anything else: what Date.parse would guess at, dates that do not exist, other zones', () => {
    for (const bad of [
      'in 5',
      'x 5',
      'a 1',
      'May 1',
      '5 z',
      'soon',
      '',
      '2026-12-02T04:00:10Z',
      'Wed, 02 Dec 2026 04:00:10 UTC',
      'Wed, 02 Dec 2026 04:00:10 +0000',
      'Wed, 2 Dec 2026 04:00:10 GMT',
      'Wed, 31 Apr 2026 04:00:10 GMT',
      'Sat, 29 Feb 2025 00:00:00 GMT',
      'Wed, 02 Dec 2026 24:00:00 GMT',
      'Wed, 02 Dec 2026 04:60:00 GMT',
      'Wed, 00 Dec 2026 04:00:00 GMT',
      'Wed, 02 Foo 2026 04:00:10 GMT',
      'Wed Dec 2 04:00:10 2026',
    ]) {
      expect(parseHttpDate(bad, NOW), bad).toBeNaN();
    }
  });
});
