/**
 * @module Errors: one class for bad options, thrown at construction, and the docs base URL.
 */

/** Where every error code is explained. One constant, so the URL never drifts between messages. */
export const DOCS_URL = 'https://github.com/tollgate/tollgate/blob/main/docs/errors.md';

function describe(value: unknown): string {
  if (typeof value === 'string') return `'${value.length > 60 ? `${value.slice(0, 57)}...` : value}' (string)`;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return `${String(value)} (${typeof value})`;
  }
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return `an array of ${value.length}`;
  return `a ${typeof value}`;
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
    super(`${code}: '${option}' ${message}; received ${describe(received)}. See ${DOCS_URL}#${code.toLowerCase()}`);
    this.name = 'RateLimitConfigError';
    this.code = code;
    this.option = option;
    this.received = received;
  }
}
