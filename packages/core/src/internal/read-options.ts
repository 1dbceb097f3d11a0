/**
 * @module Reading an options object the same way everywhere: it must be a plain object, undefined
 * values count as absent (ERL's rule: passing undefined equals not passing), and an unknown key is an
 * error that lists the valid ones, so a typo never falls back to a default in silence.
 */
import { RateLimitConfigError } from '../errors.js';
import { peerHint } from './peer-options.js';

/** Every key of `T` mapped to true: the compiler keeps a list of known options complete. */
export type KeysEnum<T> = { [P in keyof Required<T>]: true };

/**
 * Drops keys whose value is undefined: passing undefined means "not passed". Each key is copied as an own
 * property, `__proto__` too (options parsed from JSON have it as one): assigned, it would set the copy's
 * prototype, pass the unknown-key check unseen, and lend its options to every read of the copy.
 */
export function omitUndefined<T extends object>(options: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(options)) {
    if (v !== undefined) Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  }
  return out as T;
}

/**
 * Checks that `options` only has keys listed in `known`, naming the first stranger by its path, and for
 * an option another library spells so (`peers`: internal/peer-options.ts), what to write here instead.
 */
export function rejectUnknownKeys(options: object, known: object, path: string, peers?: Readonly<Record<string, string>>): void {
  for (const key of Object.keys(options)) {
    if (!Object.hasOwn(known, key)) {
      throw new RateLimitConfigError(
        'ERR_RL_UNKNOWN_OPTION',
        path === '' ? key : `${path}.${key}`,
        `is not an option (valid: ${Object.keys(known).join(', ')})${peerHint(key, peers)}`,
        (options as Record<string, unknown>)[key],
      );
    }
  }
}

/**
 * `input` as an options object with only `known` keys and no undefined values. `path` names it in
 * errors (`'options'` for a top-level options argument, whose keys are then named bare) and `example`
 * shows a valid one.
 */
export function readOptions<T extends object>(
  input: T,
  known: object,
  path: string,
  example: string,
  peers?: Readonly<Record<string, string>>,
): T {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new RateLimitConfigError('ERR_RL_INVALID_OPTIONS', path, `must be an options object like ${example}`, input);
  }
  const options = omitUndefined(input);
  rejectUnknownKeys(options, known, path === 'options' ? '' : path, peers);
  return options;
}

/**
 * `options` with each older spelling of `renamed` (`{ old: 'new' }`) moved to its current name, so the
 * rest of the parser reads one name. Both spellings at once is `ERR_RL_INVALID_OPTION` at `path`.old:
 * which one wins would be a guess.
 */
export function renameOptions<T extends object>(options: T, renamed: Readonly<Record<string, string>>, path: string): T {
  const out = options as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  for (const [old, current] of Object.entries(renamed)) {
    if (out[old] === undefined) continue;
    if (out[current] !== undefined) {
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_OPTION',
        path === '' ? old : `${path}.${old}`,
        `is the older spelling of '${current}'; pass only '${current}'`,
        out[old],
      );
    }
    copy ??= { ...out };
    copy[current] = copy[old];
    delete copy[old];
  }
  return (copy ?? out) as T;
}

/**
 * The options of a feature that a boolean switches: false (off), or `input` read as `readOptions` reads
 * it, `true` reading as `{}` (on, with its defaults). Absent (undefined), the feature is `whenAbsent`:
 * on for the ones that protect (the breaker), off for the ones that cost and only inform (hot keys).
 * Anything else that is not an object is `code` at `path`, "must be true, false or { <the known keys> }".
 */
export function readSwitchOptions<T extends object>(
  input: T | boolean | undefined,
  known: KeysEnum<T>,
  path: string,
  example: string,
  code: string,
  whenAbsent: 'on' | 'off',
): T | false {
  if (input === false || (input === undefined && whenAbsent === 'off')) return false;
  // An array is an object, but never options: the switch's own code names it, as for any other value.
  if (input !== undefined && input !== true && (input === null || typeof input !== 'object' || Array.isArray(input))) {
    throw new RateLimitConfigError(code, path, `must be true, false or { ${Object.keys(known).join(', ')} }`, input);
  }
  return readOptions(input === undefined || input === true ? ({} as T) : input, known, path, example);
}

/**
 * `value` when it is a safe integer from 1 to `max`; anything else (a fraction, NaN, a string, 0) is
 * `code` at `path`, with `must` as the message. Every positive-integer option of the core reads through here.
 */
export function positiveInteger(value: unknown, code: string, path: string, must: string, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > max) {
    throw new RateLimitConfigError(code, path, must, value);
  }
  return value;
}
