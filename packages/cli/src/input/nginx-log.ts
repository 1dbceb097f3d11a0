/**
 * @module nginx `combined` log lines, split without a regular expression:
 * `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"`,
 * optionally followed by more fields, quoted or not (nginx's stock `main` format adds `"$http_x_forwarded_for"`;
 * others add `$request_time` or `$msec` unquoted).
 * nginx escapes `"` inside a quoted value as `\x22`, so a quote always ends a field. The split records
 * where each field starts and ends in one reused object and copies out only the fields asked for: a
 * replay reads two or three fields of a line, and allocating the other six costs more than the split.
 */
import { parseNginxTime } from './log-time.js';

/** The named fields of a combined line, in order; extra quoted fields follow under the names given. */
export const NGINX_FIELDS = [
  'remote_addr',
  'remote_user',
  'time_local',
  'request',
  'status',
  'body_bytes_sent',
  'http_referer',
  'http_user_agent',
] as const;

/** The stock `main` format's one extra field. */
export const DEFAULT_NGINX_EXTRA_FIELDS: readonly string[] = ['http_x_forwarded_for'];

const MAX_FIELDS = 64;

/** Where the fields of the last line split are; valid until the next split. */
export interface NginxLine {
  at: number;
  line: string;
  /** Fields found: NGINX_FIELDS, then the extra quoted fields. */
  count: number;
  readonly starts: Int32Array;
  readonly ends: Int32Array;
}

/** Field `i` of a split line (its text; `-` stays `-`), or undefined when the line has fewer fields. */
export function nginxField(l: NginxLine, i: number): string | undefined {
  return i < l.count ? l.line.slice(l.starts[i], l.ends[i]) : undefined;
}

/** True when field `i` is nginx's `-` (no value) or absent: tested without copying the field out. */
export function nginxDash(l: NginxLine, i: number): boolean {
  if (i >= l.count) return true;
  const from = l.starts[i] as number;
  return (l.ends[i] as number) - from === 1 && l.line.charCodeAt(from) === 45;
}

/** A reusable holder for `splitNginxLine`. */
export function createNginxLine(): NginxLine {
  return { at: 0, line: '', count: 0, starts: new Int32Array(MAX_FIELDS), ends: new Int32Array(MAX_FIELDS) };
}

/** One time text and its value: a log holds hundreds of lines per second with the same text. */
let lastTimeText = '';
let lastTime = Number.NaN;

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

/**
 * The quote that ends a quoted field starting at `from`: nginx writes a `"` inside a value as `\x22`, so
 * the next quote; Apache writes `\"`, so a quote after a backslash (not itself escaped) is skipped.
 */
function closingQuote(line: string, from: number): number {
  let q = line.indexOf('"', from);
  while (q > from && line.charCodeAt(q - 1) === 92 && !escapedBackslash(line, q - 1, from)) q = line.indexOf('"', q + 1);
  return q;
}

/** True when the backslash at `at` is itself escaped (an odd run of backslashes before it, within the field). */
function escapedBackslash(line: string, at: number, from: number): boolean {
  let run = 0;
  for (let i = at - 1; i >= from && line.charCodeAt(i) === 92; i--) run += 1;
  return run % 2 === 1;
}

/** The end of the unquoted token that starts at `p` (the next space, or `to`). */
function tokenEnd(line: string, p: number, to: number): number {
  const space = line.indexOf(' ', p);
  return space < 0 || space > to ? to : space;
}

/**
 * The end of the unquoted field that starts at `p`. nginx writes the `$upstream_*` variables of a request
 * that tried several servers as a list, `, ` between servers and ` : ` between the groups of an internal
 * redirect (`0.300, 0.200 : 0.050`): one field, not three, or every field after it shifts by one.
 */
function fieldEnd(line: string, p: number, to: number): number {
  let end = tokenEnd(line, p, to);
  for (;;) {
    if (end < to && line.charCodeAt(end - 1) === 44 && end + 1 < to && line.charCodeAt(end + 1) !== 32) {
      end = tokenEnd(line, end + 1, to);
    } else if (end + 3 < to && line.charCodeAt(end + 1) === 58 && line.charCodeAt(end + 2) === 32 && line.charCodeAt(end + 3) !== 32) {
      end = tokenEnd(line, end + 3, to);
    } else {
      return end;
    }
  }
}

/** Records the space-separated fields of `line` from `from` to `to` in `out` from field `n` (a list, see fieldEnd, is one field); returns the fields found so far. */
function unquotedFields(line: string, from: number, to: number, out: NginxLine, n: number): number {
  let p = from;
  while (p < to && n < MAX_FIELDS) {
    while (p < to && line.charCodeAt(p) === 32) p += 1;
    if (p >= to) break;
    const end = fieldEnd(line, p, to);
    out.starts[n] = p;
    out.ends[n] = end;
    n += 1;
    p = end;
  }
  return n;
}

/** Splits `line` into `out` (with the unquoted fields after the quoted ones when `unquoted`); returns undefined, or the reason it is not a combined line. */
export function splitNginxLine(line: string, out: NginxLine, unquoted = true): string | undefined {
  const sp1 = line.indexOf(' ');
  if (sp1 <= 0) return 'not an nginx combined line (no client address)';
  const open = line.indexOf(' [', sp1);
  if (open < 0) return 'not an nginx combined line (no [time])';
  const close = line.indexOf('] "', open);
  if (close < 0) return 'not an nginx combined line (no ] "request")';
  const t0 = open + 2;
  if (close - t0 !== lastTimeText.length || !line.startsWith(lastTimeText, t0)) {
    lastTimeText = line.slice(t0, close);
    lastTime = parseNginxTime(lastTimeText);
  }
  if (Number.isNaN(lastTime)) return `bad time '${line.slice(t0, close)}'`;
  const s = out.starts;
  const e = out.ends;
  s[0] = 0;
  e[0] = sp1;
  const userFrom = line.indexOf(' ', sp1 + 1);
  s[1] = userFrom > 0 && userFrom < open ? userFrom + 1 : open;
  e[1] = open;
  s[2] = t0;
  e[2] = close;
  const reqEnd = closingQuote(line, close + 3);
  if (reqEnd < 0) return 'unterminated "request"';
  s[3] = close + 3;
  e[3] = reqEnd;
  const st = reqEnd + 2;
  if (
    line.charCodeAt(reqEnd + 1) !== 32 ||
    !isDigit(line.charCodeAt(st)) ||
    !isDigit(line.charCodeAt(st + 1)) ||
    !isDigit(line.charCodeAt(st + 2)) ||
    line.charCodeAt(st + 3) !== 32
  ) {
    return `bad status '${line.slice(st, line.indexOf(' ', st))}'`;
  }
  s[4] = st;
  e[4] = st + 3;
  // The rest is `$body_bytes_sent` and then quoted fields: quotes pair up, so a one-character search
  // (much faster than looking for ' "') finds every field's start and end.
  let q = line.indexOf('"', st + 4);
  s[5] = st + 4;
  e[5] = q < 0 ? line.length : q - 1;
  let n = 6;
  while (q >= 0 && n < MAX_FIELDS) {
    const end = closingQuote(line, q + 1);
    if (end < 0) return 'unterminated quoted field';
    s[n] = q + 1;
    e[n] = end;
    n += 1;
    q = line.indexOf('"', end + 1);
    // Unquoted fields after it (`$request_time`, `$msec`), as formats that extend `combined` log them.
    const gapEnd = q < 0 ? line.length : q;
    if (unquoted && gapEnd - end > 2) n = unquotedFields(line, end + 1, gapEnd, out, n);
  }
  // The Common Log Format (Apache's `common`) ends at the bytes: no referer, no user agent.
  if (n !== 6 && n < NGINX_FIELDS.length) return 'missing "referer" "user agent"';
  out.at = lastTime;
  out.line = line;
  out.count = n;
  return undefined;
}
