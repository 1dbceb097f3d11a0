/**
 * @module The client's coded errors: one class, `RateLimitClientError`, with the same shape as the
 * core's errors (a stable `ERR_RL_*` `code`, the message starting with it and ending with the docs link),
 * and the options reader every factory of this package uses (bad options are the core's
 * `RateLimitConfigError`, thrown at construction).
 */
import { DOCS_URL, RateLimitConfigError } from '@tollgate/core';

/** The codes a `RateLimitClientError` can carry; each has its section in docs/errors.md. */
export type ClientErrorCode =
  | 'ERR_RL_DEADLINE_EXCEEDED'
  | 'ERR_RL_QUEUE_FULL'
  | 'ERR_RL_TASK_EXPIRED'
  | 'ERR_RL_TASK_TOO_COSTLY'
  | 'ERR_RL_SHAPER_CLOSED'
  | 'ERR_RL_SHAPER_STORE';

/**
 * What `withRetry` and a shaper reject with when they, not the server or the task, end a call: a total
 * deadline passed, a full queue, a task that could not start in time. Match on `code`.
 */
export class RateLimitClientError extends Error {
  readonly code: ClientErrorCode;

  constructor(code: ClientErrorCode, message: string) {
    super(`${code}: ${message}. See ${DOCS_URL}#${code.toLowerCase()}`);
    this.name = 'RateLimitClientError';
    this.code = code;
  }
}

/** Every key of `T` mapped to true: the compiler keeps a list of known options complete. */
export type KeysEnum<T> = { [P in keyof Required<T>]: true };

/** `input` as an options object with only `known` keys and no undefined values (undefined means "not passed"). */
export function readOptions<T extends object>(input: T | undefined, known: KeysEnum<T>, path: string, example: string): Partial<T> {
  if (input === undefined) return {};
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new RateLimitConfigError('ERR_RL_INVALID_OPTIONS', path, `must be an options object like ${example}`, input);
  }
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined) continue;
    if (!Object.hasOwn(known, key)) {
      const where = path === 'options' ? key : `${path}.${key}`;
      throw new RateLimitConfigError('ERR_RL_UNKNOWN_OPTION', where, `is not an option (valid: ${Object.keys(known).join(', ')})`, value);
    }
    out[key] = value;
  }
  return out as Partial<T>;
}

/** `value` when it is an integer in [min, max]; else `ERR_RL_INVALID_OPTION` naming `path`. */
export function integerIn(value: unknown, path: string, min: number, max: number, hint: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new RateLimitConfigError('ERR_RL_INVALID_OPTION', path, `must be an integer from ${min} to ${max}, ${hint}`, value);
  }
  return value;
}

/** `value` when it is a finite number in [min, max]; else `ERR_RL_INVALID_OPTION` naming `path`. */
export function numberIn(value: unknown, path: string, min: number, max: number, hint: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new RateLimitConfigError('ERR_RL_INVALID_OPTION', path, `must be a number from ${min} to ${max}, ${hint}`, value);
  }
  return value;
}

/** `value` when it is a function; else `ERR_RL_INVALID_OPTION` naming `path`. */
export function functionOption<F>(value: unknown, path: string, hint: string): F {
  if (typeof value !== 'function') throw new RateLimitConfigError('ERR_RL_INVALID_OPTION', path, `must be a function, e.g. ${hint}`, value);
  return value as F;
}

/** `value` when it is one of `choices`; else `ERR_RL_INVALID_OPTION` naming `path`. */
export function oneOf<T extends string | boolean>(value: unknown, path: string, choices: readonly T[]): T {
  if (!choices.includes(value as T)) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_OPTION',
      path,
      `must be one of ${choices.map((c) => JSON.stringify(c)).join(', ')}`,
      value,
    );
  }
  return value as T;
}
