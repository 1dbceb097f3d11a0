/**
 * @module Warn-once diagnostics for setups that are valid but probably wrong (a forwarding header from an
 * untrusted peer, a proxy setting that trusts everyone). Each code warns at most once per instance,
 * through the injected logger, and each can be switched off; a diagnostic never throws into a request.
 */
import { DOCS_URL } from './errors.js';
import type { Logger } from './types.js';

export interface Diagnostics {
  /** Logs `message` under `code` (`WRN_RL_*`) the first time this code is raised, unless switched off. */
  warn(code: string, message: string): void;
}

/**
 * `validate: false` silences every diagnostic; `validate: { WRN_RL_UNKEYED: false }` silences one code.
 * Defaults to all on.
 */
export type ValidateOption = boolean | Readonly<Record<string, boolean>>;

/**
 * `raised` is the set of codes already logged; pass one shared set to give several `Diagnostics`
 * (one per request logger, say) a single warn-once memory.
 */
export function createDiagnostics(logger: Logger, validate: ValidateOption = true, raised: Set<string> = new Set()): Diagnostics {
  return {
    warn(code, message) {
      if (validate === false || raised.has(code)) return;
      if (typeof validate === 'object' && validate[code] === false) return;
      raised.add(code);
      try {
        logger.warn(`${code}: ${message} See ${DOCS_URL}#${code.toLowerCase()}`);
      } catch {
        // A broken logger must not break the request that happened to trigger the warning.
      }
    },
  };
}
