/**
 * @module Warn-once diagnostics for setups that are valid but probably wrong (a forwarding header from an
 * untrusted peer, a proxy setting that trusts everyone). Each code warns at most once per instance (a
 * failing callback's, once per callback),
 * through the injected logger, and each can be switched off; a diagnostic never throws into a request.
 */
import { RateLimitConfigError, seeDocs } from './errors.js';
import { PEER_VALIDATIONS, peerHint } from './internal/peer-options.js';
import { type Logger, safeLog } from './logging.js';

/** Every warning tollgate raises; each is explained in docs/errors.md. */
export const WARNING_CODES = [
  'WRN_RL_BREAKER_CLOSED',
  'WRN_RL_BUDGETS_RESTORED',
  'WRN_RL_BREAKER_OPEN',
  'WRN_RL_CLIENT_ENDED',
  'WRN_RL_CLIENT_RESENDS',
  'WRN_RL_CORRUPT_STATE',
  'WRN_RL_CREATED_IN_REQUEST_HANDLER',
  'WRN_RL_EVICTION_POLICY',
  'WRN_RL_HOOK_FAILED',
  'WRN_RL_HOOK_TIMEOUT',
  'WRN_RL_HOT_KEYS_OFF',
  'WRN_RL_IGNORED_FORWARDED_HEADER',
  'WRN_RL_INVALID_COST',
  'WRN_RL_INVALID_KEY_ID',
  'WRN_RL_INVALID_REMOTE_ADDRESS',
  'WRN_RL_LEASES_RESTORED',
  'WRN_RL_LOG_SUPPRESSED',
  'WRN_RL_MALFORMED_FORWARDED_HEADER',
  'WRN_RL_PERMISSIVE_TRUSTED_PROXIES',
  'WRN_RL_PERMISSIVE_TRUST_PROXY',
  'WRN_RL_REFUND_FAILED',
  'WRN_RL_RESPONSE_STARTED',
  'WRN_RL_ROUTES_BEFORE_REGISTER',
  'WRN_RL_SENTINEL_NO_FAILOVER_DETECTOR',
  'WRN_RL_SHADOW_LIMITED',
  'WRN_RL_STORE_EVICTING',
  'WRN_RL_UNDEFINED_REMOTE_ADDRESS',
  'WRN_RL_UNKEYED',
  'WRN_RL_UNKNOWN_PLAN',
  'WRN_RL_UNTRUSTED_FORWARDED_HEADER',
] as const;

/** A warning code tollgate logs; each is explained in docs/errors.md and can be switched off with `validate`. */
export type WarningCode = (typeof WARNING_CODES)[number];

/**
 * Warn-once diagnostics: each code is logged at most once (a callback's, `fields.hook`, once per
 * callback), unless `validate` switches it off.
 */
export interface Diagnostics {
  /**
   * Logs `message` under `code` the first time this code is raised, unless switched off. `fields`
   * carry what came from the request or the user's code (an error, a value), never the message.
   */
  warn(code: WarningCode, message: string, fields?: Readonly<Record<string, unknown>>): void;
  /** False when `validate` switches `code` off. */
  enabled(code: WarningCode): boolean;
}

/**
 * `validate: false` silences every diagnostic; `validate: { WRN_RL_UNKEYED: false }` silences one code.
 * Defaults to all on.
 */
export type ValidateOption = boolean | Readonly<Partial<Record<WarningCode, boolean>>>;

/** True for a code in `WARNING_CODES`: lets option parsers reject a misspelt code in `validate`. */
export function isWarningCode(code: string): code is WarningCode {
  return (WARNING_CODES as readonly string[]).includes(code);
}

/**
 * `raised` is the set of codes already logged; pass one shared set to give several `Diagnostics`
 * (one per request logger, say) a single warn-once memory.
 */
export function createDiagnostics(logger: Logger, validate: ValidateOption = true, raised: Set<string> = new Set()): Diagnostics {
  const enabled = (code: WarningCode): boolean => warningEnabled(validate, code);
  return {
    warn(code, message, fields) {
      // A callback's warning is once per callback: `onDecision` failing once must not hide `key` failing later.
      const once = typeof fields?.hook === 'string' ? `${code} ${fields.hook}` : code;
      if (raised.has(once) || !enabled(code)) return;
      raised.add(once);
      safeLog(logger, 'warn', fields === undefined ? { code } : { ...fields, code }, `${code}: ${message} ${seeDocs(code)}`);
    },
    enabled,
  };
}

/** Whether `validate` leaves `code` on. */
export function warningEnabled(validate: ValidateOption, code: WarningCode): boolean {
  return validate !== false && !(typeof validate === 'object' && validate[code] === false);
}

/** Validates a `validate` option (found at `path`): a boolean, or an object from warning codes to booleans. */
export function parseValidate(value: unknown, path = 'validate'): ValidateOption {
  const validate = value ?? true;
  if (typeof validate !== 'boolean' && (validate === null || typeof validate !== 'object')) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_OPTION',
      path,
      'must be a boolean or an object like { WRN_RL_UNKEYED: false }',
      validate,
    );
  }
  if (typeof validate === 'object') {
    for (const [code, on] of Object.entries(validate)) {
      if (!isWarningCode(code) || typeof on !== 'boolean') {
        throw new RateLimitConfigError(
          'ERR_RL_INVALID_OPTION',
          `${path}.${code}`,
          `must name a warning code (${WARNING_CODES.join(', ')}) with true or false${peerHint(code, PEER_VALIDATIONS)}`,
          on,
        );
      }
    }
  }
  return validate as ValidateOption;
}
