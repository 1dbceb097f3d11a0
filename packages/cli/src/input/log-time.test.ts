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

  it.each([
    '10/Foo/2026:13:55:36 +0000',
    '10/Oct/2026:25:55:36 +0000',
    '10/Oct/2026:13:55:36 0000',
    '10/Oct/2026 13:55:36 +0000',
    '',
    // Dates that do not exist, and other separators: never rolled over to another day.
    '29/Feb/2025:13:55:36 +0000',
    '31/Apr/2026:13:55:36 +0000',
    '00/Apr/2026:13:55:36 +0000',
    '10/Oct/2026:13x55x36 +0000',
    '10/Oct/2026:13:55:36++0000',
    // A second 60 would be the next minute's first: ISO 8601 text refuses it too.
    '10/Oct/2026:13:55:60 +0000',
  ])('refuses %j', (text) => {
    expect(parseNginxTime(text)).toBeNaN();
  });

  it('reads ISO 8601 without an offset as UTC, whatever the time zone of the machine', () => {
    expect(parseTimeValue('2026-10-10T13:55:36')).toBe(Date.UTC(2026, 9, 10, 13, 55, 36));
    expect(parseTimeValue('2026-10-10 13:55:36.5')).toBe(Date.UTC(2026, 9, 10, 13, 55, 36, 500));
    expect(parseTimeValue('2026-10-10T13:55:36-0500')).toBe(Date.UTC(2026, 9, 10, 18, 55, 36));
    // ISO 8601's other spellings: an offset of whole hours, a comma before the fraction.
    expect(parseTimeValue('2026-10-10T13:55:36+02')).toBe(Date.UTC(2026, 9, 10, 11, 55, 36));
    expect(parseTimeValue('2026-10-10T13:55:36,250Z')).toBe(Date.UTC(2026, 9, 10, 13, 55, 36, 250));
  });

  it('reads nginx $time_local text in a JSON or CSV field (a log_format with "time":"$time_local")', () => {
    expect(parseTimeValue('10/Oct/2026:13:55:36 +0200')).toBe(Date.UTC(2026, 9, 10, 11, 55, 36));
    expect(parseTimeValue('10/Oct/2026:13:55:60 +0000')).toBeNaN();
  });

  it('takes epoch numbers as seconds below 1e11 and as milliseconds above', () => {
    expect(epochToMs(1_700_000_000)).toBe(1_700_000_000_000);
    expect(epochToMs(1_700_000_000.123)).toBe(1_700_000_000_123);
    expect(epochToMs(1_700_000_000_123)).toBe(1_700_000_000_123);
    expect(epochToMs(-1)).toBeNaN();
  });

  it('floors a fraction of a ms in every form, digit by digit, as the limiter floors its clock', () => {
    expect(epochToMs(1_700_000_009.9996)).toBe(1_700_000_009_999);
    expect(parseTimeValue('1700000009.9996')).toBe(1_700_000_009_999);
    expect(parseTimeValue('2023-11-14T22:13:29.9996Z')).toBe(1_700_000_009_999);
    // 1700000000.123 * 1000 is 1700000000122.9998 in binary: read from the digits, not multiplied.
    expect(epochToMs(1_700_000_000.123)).toBe(1_700_000_000_123);
    expect(epochToMs(1_700_000_000_123.9)).toBe(1_700_000_000_123);
    expect(epochToMs(1e-7)).toBe(0);
  });

  it('refuses times outside 1970 to 2248: epochs in micro- or nanoseconds are not read as distant years, nor a time past the limiter clock', () => {
    expect(epochToMs(1.696_946_105_123_456_8e18)).toBeNaN();
    expect(parseTimeValue('1696946105123456789')).toBeNaN();
    expect(epochToMs(1_696_946_105_123_456)).toBeNaN();
    expect(epochToMs(1e300)).toBeNaN();
    // The core's clock ends at 2^43 ms (2248-09-26T15:10:22.208Z): before, 2500 was read, then refused by the core on one path only.
    expect(epochToMs(2 ** 43)).toBe(2 ** 43);
    expect(epochToMs(2 ** 43 + 1)).toBeNaN();
    expect(parseTimeValue('2500-01-01T00:00:00Z')).toBeNaN();
    expect(epochToMs(253_402_300_799_999)).toBeNaN();
    expect(parseTimeValue('1969-12-31T23:59:59Z')).toBeNaN();
    expect(parseNginxTime('31/Dec/1969:23:59:59 +0000')).toBeNaN();
  });

  it('reads JSON and CSV values: numbers, numeric text, ISO 8601', () => {
    expect(parseTimeValue('1700000000.5')).toBe(1_700_000_000_500);
    expect(parseTimeValue('2026-11-23T09:00:00.250Z')).toBe(Date.UTC(2026, 10, 23, 9, 0, 0, 250));
    expect(parseTimeValue('2026-11-23T10:00:00+01:00')).toBe(Date.UTC(2026, 10, 23, 9, 0, 0));
    expect(parseTimeValue('May 5')).toBeNaN();
    expect(parseTimeValue('2028-02-29T12:00:00Z')).toBe(Date.UTC(2028, 1, 29, 12));
    for (const impossible of [
      '2026-02-30T10:00:00Z',
      '2025-02-29T10:00:00Z',
      '2026-04-31 10:00:00',
      '2026-13-01T10:00:00Z',
      '2026-01-01T24:00:00Z',
    ]) {
      expect(parseTimeValue(impossible), impossible).toBeNaN();
    }
    expect(parseTimeValue(true)).toBeNaN();
  });
});
