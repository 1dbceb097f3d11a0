/**
 * @module One log line to one request `{ at, key, cost }` for each input format: nginx `combined`, JSON
 * lines and CSV (`time,key[,cost]`). A line that cannot be read yields the reason as a string (the
 * replay counts it with its line number and goes on); a blank line or a CSV header yields undefined.
 */
import { headerValue, requestCostToMilli, xForwardedForNode } from '@tollgate/core/adapter';
import { CliError } from '../cli-error.js';
import { inRange, parseTimeValue } from './log-time.js';
import { createNginxLine, NGINX_FIELDS, type NginxLine, nginxDash, nginxField, splitNginxLine } from './nginx-log.js';
import type { Keyer, KeySpec } from './request-key.js';

export type LogFormat = 'nginx' | 'jsonl' | 'csv';
export const LOG_FORMATS: readonly LogFormat[] = ['nginx', 'jsonl', 'csv'];

/** One request of the log, in the units the limiter takes: epoch ms, key, cost in policy units. */
export interface LogRequest {
  readonly at: number;
  readonly key: string;
  readonly cost: number;
}

export type LineResult = LogRequest | string | undefined;
export type LineParser = (line: string, lineNumber: number) => LineResult;

export interface ParserOptions {
  readonly format: LogFormat;
  /** Undefined: the format's default (nginx: ip; JSON: its `key` field if present, else ip; CSV: the key column). */
  readonly key: KeySpec | undefined;
  /** The field holding the cost; undefined: JSON `cost` if present, CSV third column, else 1. */
  readonly costField: string | undefined;
  /** Names of the fields after the user agent in nginx lines. */
  readonly nginxExtraFields: readonly string[];
  /**
   * Whether unquoted fields after the user agent (`$request_time`) are fields too. Defaults to `true`; the
   * replay passes `false` unless --nginx-fields named the fields, so that a format adding an unquoted
   * `$upstream_addr` is never read as the default name's X-Forwarded-For.
   */
  readonly nginxUnquoted?: boolean;
  /** JSON field holding the time; undefined: the first of time, timestamp, @timestamp, ts. */
  readonly timeField: string | undefined;
  readonly keyer: Keyer;
}

/** A cost the core takes (a positive multiple of 1/1000, `requestCostToMilli`), read here so a bad one is named with its line; else NaN. */
function costOf(raw: unknown): number {
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && raw !== '' ? Number(raw) : Number.NaN;
  return Number.isFinite(n) && requestCostToMilli(n) > 0 ? n : Number.NaN;
}

/** `x-api-key` -> `http_x_api_key`, the name nginx gives a logged request header. */
export function nginxHeaderField(header: string): string {
  return `http_${header.toLowerCase().replace(/-/g, '_')}`;
}

function nginxParser(o: ParserOptions): LineParser {
  const names = [...NGINX_FIELDS, ...o.nginxExtraFields];
  const indexOf = (name: string, why: string): number => {
    const i = names.indexOf(name);
    if (i < 0) {
      throw new CliError(
        'ERR_RL_CLI_USAGE',
        `${why} needs the nginx field '${name}', which the log format does not have (fields: ${names.join(', ')}); ` +
          'name the quoted fields after the user agent with --nginx-fields',
      );
    }
    return i;
  };
  const xff = names.indexOf('http_x_forwarded_for');
  const key = o.key ?? { kind: 'ip' };
  const keyAt =
    key.kind === 'ip' ? 0 : indexOf(key.kind === 'header' ? nginxHeaderField(key.name) : key.name, `--key ${key.kind}:${key.name}`);
  const costAt = o.costField === undefined ? -1 : indexOf(o.costField, `--cost ${o.costField}`);
  const arrival = nginxArrival(names);
  const keyer = o.keyer;
  const l = createNginxLine();
  const unquoted = o.nginxUnquoted !== false;
  return (line) => {
    if (line === '') return undefined;
    const bad = splitNginxLine(line, l, unquoted);
    if (bad !== undefined) return bad;
    let k: string | undefined;
    if (key.kind === 'ip')
      k = keyer.fromAddress(nginxField(l, 0) as string, xff >= 0 && !nginxDash(l, xff) ? nginxField(l, xff) : undefined);
    else if (key.kind === 'header') k = keyer.fromHeader(key.name, nginxField(l, keyAt));
    else {
      k = nginxField(l, keyAt);
      if (k === '-') k = undefined;
    }
    if (k === undefined || k === '') return `no key (${key.kind === 'ip' ? 'bad client address' : `no ${names[keyAt]}`})`;
    // A line without the cost (nginx logs an empty variable as `-`) costs 1, as without --cost.
    const costText = costAt < 0 || nginxDash(l, costAt) ? undefined : nginxField(l, costAt);
    const cost = costText === undefined ? 1 : costOf(costText);
    if (Number.isNaN(cost)) return `bad cost '${costText}' (must be a positive multiple of 1/1000)`;
    const at = arrival === undefined ? l.at : arrival(l);
    return typeof at === 'string' ? at : { at, key: k, cost };
  };
}

/** `$msec` and `$request_time` as nginx writes them: seconds with a fraction of up to 3 digits. */
const SECONDS = /^\d+(\.\d{1,3})?$/;

/**
 * When the request arrived, for a format that logs `msec` and/or `request_time` (named with --nginx-fields):
 * nginx stamps a line when it writes it, at the request's end; `$time_local` has whole seconds, `$msec` the
 * same moment in milliseconds, and `$request_time` how long the request took, so the arrival is the one
 * less the other (a `$msec` in another second than `$time_local` is a field named wrongly: the line is
 * malformed). Without `$msec` the arrival stays a whole second (the one `$time_local` less the
 * duration falls in): the log has no finer time, and replay says so (input/whole-seconds.ts). A time
 * outside 1970 to 2248 makes the line unreadable, as in every other form. Undefined when the format has
 * neither: `$time_local` as it is.
 */
function nginxArrival(names: readonly string[]): ((l: NginxLine) => number | string) | undefined {
  const msecAt = names.indexOf('msec');
  const tookAt = names.indexOf('request_time');
  if (msecAt < 0 && tookAt < 0) return undefined;
  const seconds = (l: NginxLine, i: number, name: string): number | string => {
    const v = nginxField(l, i);
    return v !== undefined && SECONDS.test(v) ? Math.round(Number(v) * 1000) : `bad ${name} '${v ?? ''}'`;
  };
  const inClock = (at: number): number | string => (Number.isNaN(inRange(at)) ? `time ${at} ms out of range` : at);
  return (l) => {
    const written = msecAt < 0 ? l.at : seconds(l, msecAt, 'msec');
    if (typeof written === 'string') return written;
    // `$msec` is the moment `$time_local` writes in whole seconds: another second (a second of slack
    // each way) is not `$msec`, but a field named wrongly in --nginx-fields or shifted by one.
    if (written < l.at - 1000 || written >= l.at + 2000) {
      return `msec '${nginxField(l, msecAt)}' is not the time of [${nginxField(l, 2)}] (does --nginx-fields name the fields in the format's order?)`;
    }
    if (tookAt < 0) return inClock(written);
    const took = seconds(l, tookAt, 'request_time');
    if (typeof took === 'string') return took;
    return inClock(msecAt < 0 ? Math.floor((written - took) / 1000) * 1000 : written - took);
  };
}

const TIME_FIELDS = ['time', 'timestamp', '@timestamp', 'ts'];

type JsonObject = Record<string, unknown>;

function text(value: unknown): string | undefined {
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;
}

/**
 * A logged header value as the core reads what an adapter passes (`headerValue`): a string as it is; an array
 * (Go's `http.Header`, which Caddy logs, and Node's `headersDistinct`) is the header's repeated lines, joined
 * with `", "` as HTTP joins repeated fields, its non-strings ignored (undefined when none is left). So an
 * X-Forwarded-For logged as `["203.0.113.9", "10.0.0.3"]` names the client it named to the server, as
 * `keys.ip()` reads it (before: dropped, and the proxy was the key). A number is its text, as before: a
 * logger's rendering of a header such as `X-User-Id`.
 */
function headerText(value: unknown): string | undefined {
  return typeof value === 'number' ? String(value) : headerValue(value);
}

/**
 * Where JSON access logs put the request's headers: top-level `headers`, pino-http's `req.headers`, Caddy's
 * `request.headers`. A line has one of them; the first that holds the header is read.
 */
const HEADER_OBJECTS = ['headers', 'req.headers', 'request.headers'];

/** The value of header `name` in one headers object, whatever the case its names were logged in. */
function headerIn(h: unknown, lower: string): unknown {
  if (h === null || typeof h !== 'object' || Array.isArray(h)) return undefined;
  const headers = h as JsonObject;
  if (Object.hasOwn(headers, lower)) return headers[lower];
  for (const k of Object.keys(headers)) if (k.toLowerCase() === lower) return headers[k];
  return undefined;
}

/**
 * The text of header `name` as logged: in a headers object ({@link HEADER_OBJECTS}), else in the flat field
 * nginx names it by (`http_x_api_key`), or in `also` (another flat name some loggers use); undefined when absent.
 */
function headerOf(obj: JsonObject, name: string, also?: string): string | undefined {
  const lower = name.toLowerCase();
  for (const at of HEADER_OBJECTS) {
    const value = headerText(headerIn(fieldAt(obj, at), lower));
    if (value !== undefined) return value;
  }
  return headerText(obj[nginxHeaderField(lower)]) ?? (also === undefined ? undefined : headerText(obj[also]));
}

function jsonParser(o: ParserOptions): LineParser {
  const keyer = o.keyer;
  const key = o.key;
  return (line) => {
    if (line.trim() === '') return undefined;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      return 'not JSON';
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'not a JSON object';
    const obj = value as JsonObject;
    const timeName = o.timeField ?? TIME_FIELDS.find((f) => f in obj);
    const time = timeName === undefined ? undefined : fieldAt(obj, timeName);
    const at = time === undefined ? Number.NaN : parseTimeValue(time);
    if (Number.isNaN(at)) return timeName === undefined ? 'no time field' : `bad time ${JSON.stringify(time) ?? '(none)'}`;
    const k = jsonKey(obj, key, keyer);
    if (k === undefined || k === '') return 'no key';
    // A line without the cost field (or with null there) costs 1, as without --cost.
    const rawCost = fieldAt(obj, o.costField ?? 'cost');
    const cost = rawCost === undefined || rawCost === null ? 1 : costOf(rawCost);
    if (Number.isNaN(cost)) return `bad cost ${JSON.stringify(rawCost)} (must be a positive multiple of 1/1000)`;
    return { at, key: k, cost };
  };
}

/**
 * The key of a JSON line: the field or header `--key` names, else (without `--key`) the line's own `key` (a number too: a
 * user or tenant id, as application loggers write them), else its client address.
 */
function jsonKey(obj: JsonObject, key: ParserOptions['key'], keyer: Keyer): string | undefined {
  if (key?.kind === 'field') return text(fieldAt(obj, key.name));
  if (key?.kind === 'header') return keyer.fromHeader(key.name, headerOf(obj, key.name));
  // `--key ip` asks for the address whatever the line names.
  const own = key === undefined ? text(obj.key) : undefined;
  if (own !== undefined) return own;
  let address: string | undefined;
  for (let i = 0; i < ADDRESS_FIELDS.length && address === undefined; i++) address = text(fieldAt(obj, ADDRESS_FIELDS[i] as string));
  const xff = headerOf(obj, 'x-forwarded-for', 'x_forwarded_for');
  // `203.0.113.9:443` and `[2001:db8::1]:443` (Go's RemoteAddr, some proxies): the core's reading of such an X-Forwarded-For entry.
  return address === undefined ? undefined : keyer.fromAddress(xForwardedForNode(address) ?? address, xff);
}

/**
 * Where JSON access logs put the client address: flat (`remote_addr`, `ip`, `client_ip`), pino-http
 * (`req.remoteAddress`), Caddy (`request.client_ip`, `request.remote_ip`), Google Cloud (`httpRequest.remoteIp`).
 */
const ADDRESS_FIELDS = [
  'remote_addr',
  'ip',
  'client_ip',
  'remoteAddress',
  'req.remoteAddress',
  'request.client_ip',
  'request.remote_ip',
  'httpRequest.remoteIp',
];

/** The field `name` of `obj`: a key of that name, else a dotted path into nested objects (`req.remoteAddress`). */
function fieldAt(obj: JsonObject, name: string): unknown {
  if (Object.hasOwn(obj, name)) return obj[name];
  if (!name.includes('.')) return undefined;
  let at: unknown = obj;
  for (const part of name.split('.')) {
    if (at === null || typeof at !== 'object' || Array.isArray(at) || !Object.hasOwn(at, part)) return undefined;
    at = (at as JsonObject)[part];
  }
  return at;
}

function csvParser(o: ParserOptions): LineParser {
  if (o.key?.kind === 'header') {
    throw new CliError('ERR_RL_CLI_USAGE', 'CSV input has no headers: use --key ip (the key column is an address) or leave --key out');
  }
  const asAddress = o.key?.kind === 'ip';
  const keyer = o.keyer;
  return (line, lineNumber) => {
    if (line.trim() === '') return undefined;
    if (line.includes('"')) return quotedCsv(line, lineNumber, asAddress, keyer);
    const c1 = line.indexOf(',');
    if (c1 < 0) return 'expected time,key[,cost]';
    const timeText = line.slice(0, c1).trim();
    if (lineNumber === 1 && timeText === 'time') return undefined;
    const c2 = line.indexOf(',', c1 + 1);
    const keyText = (c2 < 0 ? line.slice(c1 + 1) : line.slice(c1 + 1, c2)).trim();
    return csvRequest(timeText, keyText, c2 < 0 ? undefined : line.slice(c2 + 1).trim(), asAddress, keyer);
  };
}

/**
 * A CSV line with quoted fields (RFC 4180: `"2026-10-10 13:55:00,123","alice"`, a `""` inside one is a
 * quote): how a time with a comma before its fraction (Python's logging) can sit in a CSV column.
 */
function quotedCsv(line: string, lineNumber: number, asAddress: boolean, keyer: Keyer): LineResult {
  const fields: string[] = [];
  let i = 0;
  while (i <= line.length) {
    while (line.charCodeAt(i) === 32) i += 1;
    if (line.charCodeAt(i) === 34) {
      let value = '';
      let j = i + 1;
      for (;;) {
        const q = line.indexOf('"', j);
        if (q < 0) return 'unterminated quoted field';
        value += line.slice(j, q);
        if (line.charCodeAt(q + 1) !== 34) {
          j = q + 1;
          break;
        }
        value += '"';
        j = q + 2;
      }
      const comma = line.indexOf(',', j);
      if (line.slice(j, comma < 0 ? line.length : comma).trim() !== '') return 'text after a quoted field';
      fields.push(value);
      i = comma < 0 ? line.length + 1 : comma + 1;
    } else {
      const comma = line.indexOf(',', i);
      fields.push(line.slice(i, comma < 0 ? line.length : comma).trim());
      i = comma < 0 ? line.length + 1 : comma + 1;
    }
  }
  if (fields.length < 2 || fields.length > 3) return 'expected time,key[,cost]';
  if (lineNumber === 1 && fields[0] === 'time') return undefined;
  return csvRequest(fields[0] as string, (fields[1] as string).trim(), fields[2]?.trim(), asAddress, keyer);
}

/**
 * The request of a CSV line's columns (`costText` undefined: no third column). An empty third column
 * (`1700000000,alice,`, as exports write a missing value) is a line without the cost: it costs 1, as
 * without the column (before: malformed, "bad cost ''").
 */
function csvRequest(timeText: string, keyText: string, costText: string | undefined, asAddress: boolean, keyer: Keyer): LineResult {
  const at = parseTimeValue(timeText);
  if (Number.isNaN(at)) return `bad time '${timeText}'`;
  const k = asAddress ? keyer.fromAddress(keyText, undefined) : keyText;
  if (k === undefined || k === '') return asAddress ? `bad client address '${keyText}'` : 'empty key';
  if (costText?.includes(',')) return 'expected time,key[,cost]';
  const cost = costText === undefined || costText === '' ? 1 : costOf(costText);
  if (Number.isNaN(cost)) return `bad cost '${costText}' (must be a positive multiple of 1/1000)`;
  return { at, key: k, cost };
}

export function createLineParser(options: ParserOptions): LineParser {
  if (options.costField !== undefined && options.format === 'csv') {
    throw new CliError('ERR_RL_CLI_USAGE', 'CSV input takes its cost from the third column; leave --cost out');
  }
  if (options.format === 'nginx') return nginxParser(options);
  if (options.format === 'jsonl') return jsonParser(options);
  return csvParser(options);
}

/** How many non-blank lines from a file's start decide its format when its name does not. */
const DETECT_LINES = 100;

/** The format one line looks like. */
function formatOfLine(line: string): LogFormat {
  const t = line.trimStart();
  if (t.startsWith('{')) return 'jsonl';
  if (/^(?:"(?:time|[\d.]+|\d{4}-\d{2}-\d{2}[^"]*)"|time|[\d.]+|\d{4}-\d{2}-\d{2}[^,]*) *,/.test(t)) return 'csv';
  return 'nginx';
}

/**
 * The format of a file by its name (`.jsonl`/`.ndjson`/`.json`, `.csv`, each optionally `.gz`), else by
 * what most of its first {@link DETECT_LINES} non-blank lines look like (ties: JSON, CSV, nginx):
 * one line alone misleads on a stream cut mid-line (`tail -c`) or one that starts with a blank line. A
 * `.log` name says nothing: nginx writes `access.log`, and pino and most application loggers `app.log`.
 */
export function detectFormat(path: string, lines: string | readonly string[]): LogFormat {
  const name = path.toLowerCase().replace(/\.gz$/, '');
  if (name.endsWith('.csv')) return 'csv';
  if (name.endsWith('.jsonl') || name.endsWith('.ndjson') || name.endsWith('.json')) return 'jsonl';
  const votes: Record<LogFormat, number> = { jsonl: 0, csv: 0, nginx: 0 };
  let seen = 0;
  for (const line of typeof lines === 'string' ? [lines] : lines) {
    if (line.trim() === '') continue;
    votes[formatOfLine(line)] += 1;
    if (++seen === DETECT_LINES) break;
  }
  if (votes.jsonl >= votes.csv && votes.jsonl >= votes.nginx && votes.jsonl > 0) return 'jsonl';
  if (votes.csv >= votes.nginx && votes.csv > 0) return 'csv';
  return 'nginx';
}
