/**
 * @module The logging contract. Logs belong to the app: tollgate writes pino-style `(fields, message)`
 * lines to the logger the app gives it (pino, Fastify's `request.log`, bunyan fit as they are), with a
 * `code` naming the event (docs/errors.md) and the error object under `err`. User data (keys, header
 * values) only ever travels in fields, never in the message text, so a key built from request data
 * cannot forge a log line. `console` is the last resort, wrapped so each line stays one line.
 */
import { RateLimitConfigError } from './errors.js';

/** The fields of one log line. `code` names the event; `err` is the error object, as pino expects. */
export interface LogFields {
  readonly code?: string;
  readonly err?: unknown;
  readonly [field: string]: unknown;
}

/** pino-style: the fields first, then a constant message. */
export type LogFn = (fields: LogFields, message: string) => void;

/** Where tollgate's warnings and errors go. pino and Fastify's `request.log` fit as they are. */
export interface Logger {
  warn: LogFn;
  error: LogFn;
}

/** True when `value` has the two methods tollgate calls. */
export function isLogger(value: unknown): value is Logger {
  const l = value as Partial<Logger> | null;
  return typeof l === 'object' && l !== null && typeof l.warn === 'function' && typeof l.error === 'function';
}

/**
 * Throws `ERR_RL_INVALID_LOGGER` (at `path`) unless `value` is undefined or a logger: one rule for the
 * limiter, the stores, `keys.ip()` and the adapters, so a bad logger never silently swallows warnings.
 */
export function checkLogger(value: unknown, path: string): void {
  if (value !== undefined && !isLogger(value)) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_LOGGER',
      path,
      'must have warn() and error() methods, pino-style (fields, message), like console or pino',
      value,
    );
  }
}

/** An error as plain JSON fields: what a one-line console log can show of it. */
function errorFields(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const code = (err as { code?: unknown }).code;
  return code === undefined ? { type: err.name, message: err.message } : { type: err.name, message: err.message, code };
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it finds.
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/**
 * `text` with what can break or forge a terminal or log line as JSON `\uXXXX` escapes: C0 and C1 controls
 * (ESC, NEL), DEL, line and paragraph separators and bidirectional formatting characters. JSON.stringify
 * escapes C0 only: a header byte 0x85 (NEL, which some log viewers split on) or U+202E would pass.
 */
export function escapeControl(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** One line: the message, then the fields as JSON, user data escaped (`escapeControl`), so a line stays one line. */
export function formatLine(fields: LogFields, message: string): string {
  const { err, ...rest } = fields;
  const shown: Record<string, unknown> = err === undefined ? rest : { ...rest, err: errorFields(err) };
  let json: string;
  try {
    json = JSON.stringify(shown);
  } catch {
    json = '{"fields":"unserializable"}';
  }
  return `${escapeControl(message)} ${escapeControl(json)}`;
}

/** Writes each line to `console.warn` / `console.error`, on one line. */
export const consoleLogger: Logger = Object.freeze({
  warn: (fields: LogFields, message: string) => console.warn(formatLine(fields, message)),
  error: (fields: LogFields, message: string) => console.error(formatLine(fields, message)),
});

/**
 * The logger to write to: `console` itself becomes `consoleLogger` (console.warn(obj, msg) would print
 * the object first, over several lines); anything else is used as given.
 */
export function toLogger(logger: Logger | Console | undefined): Logger {
  if (logger === undefined || logger === console) return consoleLogger;
  return logger as Logger;
}

/** Calls `fn`, swallowing what a broken logger throws: logging never breaks a request. */
export function safeLog(logger: Logger, level: 'warn' | 'error', fields: LogFields, message: string): void {
  try {
    logger[level](fields, message);
  } catch {
    // A broken logger must not break the request that happened to log.
  }
}

/** How many lines a middleware may log per interval before it only counts them. */
export interface LogRateOptions {
  /** Lines written per interval before the rest are counted. Defaults to `10`. */
  lines?: number;
  /** The interval, in ms; also the period of the shadow-mode summary. Defaults to `60_000`. */
  intervalMs?: number;
}

/** The default log budget of a middleware: at most 10 lines a minute, then one summary of what was dropped. */
export const DEFAULT_LOG_RATE: Readonly<Required<LogRateOptions>> = Object.freeze({ lines: 10, intervalMs: 60_000 });

/**
 * A budget of log lines shared by every logger of one middleware: at most `lines` per `intervalMs`
 * are written; the rest are counted, and when the interval ends one `WRN_RL_LOG_SUPPRESSED` line
 * reports how many were dropped. Whatever a request does, the log grows by a bounded amount.
 */
export interface LogGate {
  /** `logger` as seen through the gate: its lines count against the budget. */
  wrap(logger: Logger): Logger;
  /** Lines suppressed since the gate was made (for tests and stats). */
  readonly suppressed: number;
  /** Writes the pending summary now and stops its timer. */
  close(): void;
}

/** `summary` receives the `WRN_RL_LOG_SUPPRESSED` lines; `now` is a wall clock in ms (tests inject one). */
export function createLogGate(rate: Required<LogRateOptions>, summary: Logger, now: () => number = Date.now): LogGate {
  let windowStart = now();
  let written = 0;
  let pending = 0;
  let total = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  function flush(): void {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (pending > 0) {
      safeLog(
        summary,
        'warn',
        { code: 'WRN_RL_LOG_SUPPRESSED', suppressed: pending, intervalMs: rate.intervalMs },
        `WRN_RL_LOG_SUPPRESSED: ${pending} tollgate log lines were suppressed in the last interval (at most ${rate.lines} per ${rate.intervalMs} ms)`,
      );
    }
    pending = 0;
  }

  function admit(): boolean {
    const at = now();
    if (at - windowStart >= rate.intervalMs || at < windowStart) {
      flush();
      windowStart = at;
      written = 0;
    }
    if (written < rate.lines) {
      written += 1;
      return true;
    }
    pending += 1;
    total += 1;
    if (timer === undefined) {
      timer = setTimeout(flush, Math.max(1, windowStart + rate.intervalMs - at));
      timer.unref?.();
    }
    return false;
  }

  return {
    wrap(logger) {
      return {
        warn: (fields, message) => {
          if (admit()) safeLog(logger, 'warn', fields, message);
        },
        error: (fields, message) => {
          if (admit()) safeLog(logger, 'error', fields, message);
        },
      };
    },
    get suppressed() {
      return total;
    },
    close: flush,
  };
}

/**
 * True for a logger that writes nowhere by design: Fastify's default when `Fastify()` has no logger
 * (abstract-logging: one shared no-op for every level, no `level`). pino at `level: 'silent'` has a
 * `level`, so a logger the app silenced on purpose stays silent.
 */
export function isAbstractNoopLogger(logger: unknown): boolean {
  const l = logger as { warn?: unknown; error?: unknown; level?: unknown } | null | undefined;
  return typeof l?.warn === 'function' && l.warn === l.error && typeof l.level !== 'string';
}

/**
 * At most one line per `intervalMs`, counting the ones it left out: the lines of events that can repeat
 * without end (outages of a flapping store, one key's errors, unknown plans, failed lease calls) stay
 * bounded however often they come.
 */
export class LineThrottle {
  private writtenAt = Number.NEGATIVE_INFINITY;
  private skipped = 0;

  constructor(private readonly intervalMs: number) {}

  /** At `now`: the lines left out since the last one when this one may be written, else undefined (it is counted). */
  take(now: number): number | undefined {
    if (now - this.writtenAt < this.intervalMs) {
      this.skipped += 1;
      return undefined;
    }
    const skipped = this.skipped;
    this.writtenAt = now;
    this.skipped = 0;
    return skipped;
  }
}
