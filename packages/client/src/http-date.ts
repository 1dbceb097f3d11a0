/**
 * @module HTTP-dates as RFC 9110 section 5.6.7 defines them, and nothing else: the IMF-fixdate
 * (`Sun, 06 Nov 1994 08:49:37 GMT`) and the two obsolete forms a recipient must still accept, RFC 850
 * (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`), all in UTC. `Date.parse`
 * is not used: it reads `in 5` or `May 1` as dates, and asctime (which names no zone) in the machine's
 * local time.
 */

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
const IMF = `(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT`;
const IMF_FIXDATE = new RegExp(`^${IMF}$`);
/** IMF-fixdates anywhere in a text: several `Retry-After` lines joined with ", " by `Headers`. */
export const IMF_FIXDATES = new RegExp(IMF, 'g');
const RFC_850 = new RegExp(`^(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
const ASCTIME = new RegExp(`^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) ${MONTH} ( \\d|\\d{2}) ${TIME} (\\d{4})$`);

/** Ms since the epoch of a date whose every field is in range (second 60: a leap second, read as the next one); else NaN. */
function utc(year: number, month: string, day: string, hour: string, minute: string, second: string): number {
  const m = MONTHS.indexOf(month);
  const d = Number(day);
  const [hh, mm, ss] = [Number(hour), Number(minute), Number(second)];
  if (d < 1 || hh > 23 || mm > 59 || ss > 60) return Number.NaN;
  const t = Date.UTC(year, m, d, hh, mm, ss);
  // 31 April or 30 February would roll into the next month: no such date.
  return new Date(t - (ss === 60 ? 1000 : 0)).getUTCDate() === d ? t : Number.NaN;
}

/**
 * RFC 850's two-digit year: the year with those last two digits that is not more than 50 years after
 * `now` (RFC 9110 section 5.6.7).
 */
function fullYear(twoDigits: number, now: number): number {
  const current = new Date(now).getUTCFullYear();
  let year = current - (current % 100) + twoDigits;
  if (year > current + 50) year -= 100;
  return year;
}

/** The instant an HTTP-date names, in ms since the epoch; NaN when `value` is not one. `now` places RFC 850's two-digit years. */
export function parseHttpDate(value: string, now: number = Date.now()): number {
  const v = value.trim();
  let m = IMF_FIXDATE.exec(v);
  if (m !== null) return utc(Number(m[3]), m[2] as string, m[1] as string, m[4] as string, m[5] as string, m[6] as string);
  m = RFC_850.exec(v);
  if (m !== null) return utc(fullYear(Number(m[3]), now), m[2] as string, m[1] as string, m[4] as string, m[5] as string, m[6] as string);
  m = ASCTIME.exec(v);
  if (m !== null) return utc(Number(m[6]), m[1] as string, (m[2] as string).trim(), m[3] as string, m[4] as string, m[5] as string);
  return Number.NaN;
}
