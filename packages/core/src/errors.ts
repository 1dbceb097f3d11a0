/**
 * @module Errors: one class for bad options, thrown at construction, and the docs base URL.
 */

/** Where every error code is explained. One constant, so the URL never drifts between messages. */
export const DOCS_URL = 'https://github.com/tollgate/tollgate/blob/main/docs/errors.md';

/** A short, safe description of a value for messages: `-1 (number)`, `'abc' (string)`, `an object`. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return `'${value.length > 60 ? `${value.slice(0, 57)}...` : value}' (string)`;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return `${String(value)} (${typeof value})`;
  }
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return `an array of ${value.length}`;
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** The text every coded message ends with. */
export function seeDocs(code: string): string {
  return `See ${DOCS_URL}#${code.toLowerCase()}`;
}

/**
 * An error of class `Ctor` (TypeError for a wrong type, RangeError for a value out of range) with a
 * stable `code` and the docs link, for bad input found at request time rather than at construction.
 */
export function codedError<E extends Error>(
  Ctor: new (message: string) => E,
  code: string,
  message: string,
): E & { readonly code: string } {
  const error = new Ctor(`${code}: ${message}. ${seeDocs(code)}`) as E & { code: string };
  error.code = code;
  return error;
}

/**
 * Thrown when options are invalid. `code` is stable (`ERR_RL_*`), `option` names the option by its
 * path (`policies[1].burst`), and the message says how to fix it.
 */
export class RateLimitConfigError extends TypeError {
  readonly code: string;
  readonly option: string;
  readonly received: unknown;

  constructor(code: string, option: string, message: string, received: unknown) {
    super(`${code}: '${option}' ${message}; received ${describeValue(received)}. ${seeDocs(code)}`);
    this.name = 'RateLimitConfigError';
    this.code = code;
    this.option = option;
    this.received = received;
  }
}
