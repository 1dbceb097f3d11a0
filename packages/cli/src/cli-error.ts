/**
 * @module The CLI's one error class: a usage or input problem the user fixes (a bad flag, a file that
 * cannot be read, a policy that does not parse). It carries a stable code and the docs link, like the
 * core's errors; `main` prints its message and exits 2, never a stack trace.
 */
import { DOCS_URL } from '@tollgate/core';

export type CliErrorCode = 'ERR_RL_CLI_USAGE' | 'ERR_RL_REPLAY_INPUT';

export class CliError extends Error {
  readonly code: CliErrorCode;

  constructor(code: CliErrorCode, message: string) {
    super(`${code}: ${message}. See ${DOCS_URL}#${code.toLowerCase()}`);
    this.name = 'CliError';
    this.code = code;
  }
}
