/**
 * @module Log timestamps to epoch milliseconds: nginx $time_local, epoch seconds and milliseconds, ISO 8601.
 */
import { describe, expect, it } from 'vitest';
import { epochToMs, parseNginxTime, parseTimeValue } from './log-time.js';

describe('log times', () => {
  it('reads nginx $time_local with its offset', () => {
    expect(parseNginxTime('10/Oct/2026:13:55:36 +0000')).toBe(Date.UTC(2026, 9, 10, 13, 55, 36));
    expect(parseNginxTime('10/Oct/2026:13:55:36 +0200')).toBe(Date.UTC(2026, 9, 10, 11, 55, 36));
    expect(parseNginxTime('10/Oct/2026:13:55:36 -0130')).toBe(Date.UTC(2026, 9, 10, 15, 25, 36));
  });

  it.each(['10/Foo/2026:13:55:36 +0000', '10/Oct/2026:25:55:36 +0000', '10/Oct/2026:13:55:36 0000', '10/Oct/2026 13:55:36 +0000', ''])(
    'refuses %j',
    (text) => {
      expect(parseNginxTime(text)).toBeNaN();
    },
  );

  it('takes epoch numbers as seconds below 1e11 and as milliseconds above', () => {
    expect(epochToMs(1_700_000_000)).toBe(1_700_000_000_000);
    expect(epochToMs(1_700_000_000.123)).toBe(1_700_000_000_123);
    expect(epochToMs(1_700_000_000_123)).toBe(1_700_000_000_123);
    expect(epochToMs(-1)).toBeNaN();
  });

  it('reads JSON and CSV values: numbers, numeric text, ISO 8601', () => {
    expect(parseTimeValue('1700000000.5')).toBe(1_700_000_000_500);
    expect(parseTimeValue('2026-11-23T09:00:00.250Z')).toBe(Date.UTC(2026, 10, 23, 9, 0, 0, 250));
    expect(parseTimeValue('2026-11-23T10:00:00+01:00')).toBe(Date.UTC(2026, 10, 23, 9, 0, 0));
    expect(parseTimeValue('May 5')).toBeNaN();
    expect(parseTimeValue(true)).toBeNaN();
  });
});
