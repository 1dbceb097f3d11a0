/**
 * @module Timestamps of log lines to integer epoch milliseconds: nginx `$time_local`
 * (`10/Oct/2026:13:55:36 +0200`), epoch numbers (seconds with an optional fraction, or milliseconds when
 * 1e11 or more: every date after 1973 in ms, every date before 5138 in s) and ISO 8601 text (UTC when it
 * names no offset, whatever the machine's time zone). A date that does not exist (30 February, 31 April,
 * hour 24, second 60) is not a time: the line is counted as unreadable, never moved to another day; nor is
 * one outside 1970 to 2248 (an epoch in micro- or nanoseconds; the limiter's clock ends in September 2248). A fraction of a millisecond is dropped
 * (floored, as the limiter floors its clock), from whichever form it comes.
 */

const MONTHS: Readonly<Record<string, number>> = {
  Jan: 0,
  Feb: 1,
  Mar: 2,
  Apr: 3,
  May: 4,
  Jun: 5,
  Jul: 6,
  Aug: 7,
  Sep: 8,
  Oct: 9,
  Nov: 10,
  Dec: 11,
};

/** Epoch numbers at or above this are milliseconds, below it seconds. */
export const EPOCH_MS_THRESHOLD = 1e11;

/**
 * The last ms a limiter's clock reads (the core's MAX_CLOCK_MS, 2^43: 26 September 2248): a later time
 * would be refused by the core (ERR_RL_INVALID_CLOCK) on one path and not another, so it is no time here.
 */
const END_OF_TIME_MS = 2 ** 43;

/** `ms` when it lies between the epoch and the limiter's last ms (2248); NaN otherwise. */
export function inRange(ms: number): number {
  return ms >= 0 && ms <= END_OF_TIME_MS ? ms : Number.NaN;
}

function digits(text: string, from: number, count: number): number {
  let n = 0;
  for (let i = from; i < from + count; i++) {
    const c = text.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return Number.NaN;
    n = n * 10 + c;
  }
  return n;
}

/** Whether day `day` (1-based) of month `month` (0-based) of `year` exists. */
function dayExists(year: number, month: number, day: number): boolean {
  return day >= 1 && new Date(Date.UTC(year, month, day)).getUTCDate() === day;
}

/** nginx `$time_local`: `dd/Mon/yyyy:HH:MM:SS +hhmm`. NaN when it is not one. */
export function parseNginxTime(text: string): number {
  if (text.length !== 26 || text.charCodeAt(2) !== 47 || text.charCodeAt(6) !== 47 || text.charCodeAt(11) !== 58) return Number.NaN;
  // The separators of the time (`:`), before the offset (space).
  if (text.charCodeAt(14) !== 58 || text.charCodeAt(17) !== 58 || text.charCodeAt(20) !== 32) return Number.NaN;
  const month = MONTHS[text.slice(3, 6)];
  if (month === undefined) return Number.NaN;
  const day = digits(text, 0, 2);
  const year = digits(text, 7, 4);
  const h = digits(text, 12, 2);
  const m = digits(text, 15, 2);
  const s = digits(text, 18, 2);
  const sign = text.charCodeAt(21) === 45 ? -1 : text.charCodeAt(21) === 43 ? 1 : 0;
  const oh = digits(text, 22, 2);
  const om = digits(text, 24, 2);
  if (sign === 0 || h > 23 || m > 59 || s > 59 || oh > 23 || om > 59 || !dayExists(year, month, day)) return Number.NaN;
  const utc = Date.UTC(year, month, day, h, m, s);
  return inRange(utc - sign * (oh * 60 + om) * 60_000);
}

const DECIMAL = /^(\d+)(?:\.(\d+))?$/;

/** Decimal epoch text (s or ms, see the module comment) to integer ms, the fraction floored digit by digit (no binary rounding); NaN when out of range. */
function epochTextToMs(text: string): number {
  const d = DECIMAL.exec(text);
  if (d === null) return Number.NaN;
  const whole = Number(d[1]);
  if (whole >= EPOCH_MS_THRESHOLD) return inRange(whole);
  return inRange(whole * 1000 + Number(`${d[2] ?? ''}000`.slice(0, 3)));
}

/** An epoch number (s or ms, see the module comment) to integer ms, read from its shortest decimal form; NaN when negative, not finite or out of range. */
export function epochToMs(value: number): number {
  if (!Number.isFinite(value) || value < 0) return Number.NaN;
  const text = String(value);
  // Past 1e21 (or below 1e-6) the shortest form has an exponent: far out of range, or under a ms.
  if (text.includes('e')) return value < 1 ? 0 : Number.NaN;
  return epochTextToMs(text);
}

const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):\d{2}/;

/** nginx `$time_local` as a JSON or CSV field holds it (a `log_format` with `"time":"$time_local"`). */
const NGINX_TIME = /^\d{2}\/[A-Za-z]{3}\/\d{4}:/;

/**
 * A JSON or CSV time value: an epoch number (or its text), ISO 8601 text, or nginx `$time_local` text.
 * NaN when none.
 */
export function parseTimeValue(value: unknown): number {
  if (typeof value === 'number') return epochToMs(value);
  if (typeof value !== 'string' || value === '') return Number.NaN;
  if (DECIMAL.test(value)) return epochTextToMs(value);
  if (NGINX_TIME.test(value)) return parseNginxTime(value);
  // ISO 8601 needs a date and a time; Date.parse alone accepts too much ("1", "May 5").
  const iso = ISO_DATE_TIME.exec(value);
  if (iso === null || !dayExists(Number(iso[1]), Number(iso[2]) - 1, Number(iso[3])) || Number(iso[4]) > 23) return Number.NaN;
  // ISO 8601 also writes the fraction after a comma, and an offset of whole hours as `+hh`; Date.parse
  // takes neither.
  const text = value.replace(/(:\d{2}),(\d+)/, '$1.$2').replace(/([+-]\d{2})$/, '$1:00');
  // Without an offset Date.parse would read the machine's local time: a log names UTC or says otherwise.
  const ms = Date.parse(/(?:Z|[+-]\d{2}:?\d{2})$/i.test(text) ? text : `${text.replace(' ', 'T')}Z`);
  return Number.isFinite(ms) ? inRange(ms) : Number.NaN;
}
