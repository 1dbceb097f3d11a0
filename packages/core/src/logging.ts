/**
 * @module The logging contract. Logs belong to the app: tollgate writes pino-style `(fields, message)`
 * lines to the logger the app gives it (pino, Fastify's `request.log`, bunyan fit as they are), with a
 * `code` naming the event (docs/errors.md) and the error object under `err`. User data (keys, header
 * values) only ever travels in fields, never in the message text, so a key built from request data
 * cannot forge a log line. `console` is the last resort, wrapped so each line stays one line.
 */

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

/** An error as plain JSON fields: what a one-line console log can show of it. */
function errorFields(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const code = (err as { code?: unknown }).code;
  return code === undefined ? { type: err.name, message: err.message } : { type: err.name, message: err.message, code };
}

/** One line: the message, then the fields as JSON (user data escaped by JSON.stringify). */
export function formatLine(fields: LogFields, message: string): string {
  const { err, ...rest } = fields;
  const shown: Record<string, unknown> = err === undefined ? rest : { ...rest, err: errorFields(err) };
  let json: string;
  try {
    json = JSON.stringify(shown);
  } catch {
    json = '{"fields":"unserializable"}';
  }
  return `${message} ${json}`;
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
