/**
 * @module Timestamps of log lines to integer epoch milliseconds: nginx `$time_local`
 * (`10/Oct/2026:13:55:36 +0200`), epoch numbers (seconds with an optional fraction, or milliseconds when
 * 1e11 or more: every date after 1973 in ms, every date before 5138 in s) and ISO 8601 text.
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

function digits(text: string, from: number, count: number): number {
  let n = 0;
  for (let i = from; i < from + count; i++) {
    const c = text.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return Number.NaN;
    n = n * 10 + c;
  }
  return n;
}

/** nginx `$time_local`: `dd/Mon/yyyy:HH:MM:SS +hhmm`. NaN when it is not one. */
export function parseNginxTime(text: string): number {
  if (text.length !== 26 || text.charCodeAt(2) !== 47 || text.charCodeAt(6) !== 47 || text.charCodeAt(11) !== 58) return Number.NaN;
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
  if (sign === 0 || day < 1 || day > 31 || h > 23 || m > 59 || s > 60 || oh > 23 || om > 59) return Number.NaN;
  const utc = Date.UTC(year, month, day, h, m, s);
  return utc - sign * (oh * 60 + om) * 60_000;
}

/** An epoch number (s or ms, see the module comment) to integer ms; NaN when not finite. */
export function epochToMs(value: number): number {
  if (!Number.isFinite(value) || value < 0) return Number.NaN;
  return value >= EPOCH_MS_THRESHOLD ? Math.round(value) : Math.round(value * 1000);
}

const NUMERIC = /^\d+(?:\.\d+)?$/;

/** A JSON or CSV time value: an epoch number (or its text), or ISO 8601 text. NaN when neither. */
export function parseTimeValue(value: unknown): number {
  if (typeof value === 'number') return epochToMs(value);
  if (typeof value !== 'string' || value === '') return Number.NaN;
  if (NUMERIC.test(value)) return epochToMs(Number(value));
  // ISO 8601 needs a date and a time; Date.parse alone accepts too much ("1", "May 5").
  if (!/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/.test(value)) return Number.NaN;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms : Number.NaN;
}
