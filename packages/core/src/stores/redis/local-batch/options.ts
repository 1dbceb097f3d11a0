/**
 * @module The `localBatch` option of RedisStore, read once at construction: when a key counts as hot in
 * this process, how long a batch should last, how much of a limit one batch may hold, and how many keys
 * the batcher tracks.
 */
import { RateLimitConfigError } from '../../../errors.js';
import { type KeysEnum, positiveInteger, readSwitchOptions } from '../../../internal/read-options.js';

/** `new RedisStore({ client, localBatch: true | { ... } })`: batched budgets for hot keys (docs/capacity.md). */
export interface LocalBatchOptions {
  /**
   * Decisions per second this process must see on a key (over the last second) before it takes batches
   * for it; slower keys stay on one round trip per decision, exactly as without `localBatch`. Defaults to `50`.
   */
  minRate?: number;
  /**
   * How long a batch should last at the key's observed rate, ms: the batch size is that rate times
   * `holdMs` (then capped by `maxShare` and by what is left). Units still held `2 * holdMs` after the
   * batch came are given back. Defaults to `50`.
   */
  holdMs?: number;
  /**
   * The largest share of each policy's limit (its burst for the bucket algorithms) one batch may take,
   * in (0, 1]: with P processes, at most P x this share of a limit is ever held outside Redis. Defaults to `0.1`.
   */
  maxShare?: number;
  /**
   * Keys tracked per limiter: past it, a key not decided since the others were last passed over is dropped
   * (least recently seen, near enough), its units given back. Defaults to `10_000`.
   */
  maxKeys?: number;
}

/** The settings the batcher runs on. */
export interface LocalBatchConfig {
  readonly minRate: number;
  readonly holdMs: number;
  readonly maxShare: number;
  readonly maxKeys: number;
}

const KNOWN: KeysEnum<LocalBatchOptions> = { minRate: true, holdMs: true, maxShare: true, maxKeys: true };

/** The longest `holdMs`: twice it still fits a Node timer (2^31 - 1 ms). */
export const MAX_HOLD_MS = 2 ** 30 - 1;

/** `localBatch` read: false (the default: off), or its settings. */
export function parseLocalBatch(input: LocalBatchOptions | boolean | undefined): LocalBatchConfig | false {
  const o = readSwitchOptions(input, KNOWN, 'localBatch', '{ minRate: 50, holdMs: 50, maxShare: 0.1 }', 'ERR_RL_INVALID_OPTION', 'off');
  if (o === false) return false;
  const { minRate = 50, holdMs = 50, maxShare = 0.1, maxKeys = 10_000 } = o;
  if (typeof holdMs === 'number' && holdMs > MAX_HOLD_MS) {
    // The sweep is a timer of holdMs and units go back after 2 x holdMs: past 2^31 - 1 ms Node fires a
    // timer every millisecond (TimeoutOverflowWarning) and nothing would ever be given back.
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_OPTION',
      'localBatch.holdMs',
      `must be at most ${MAX_HOLD_MS} ms (timers hold at most 2^31 - 1 ms)`,
      holdMs,
    );
  }
  if (typeof maxShare !== 'number' || !(maxShare > 0 && maxShare <= 1)) {
    throw new RateLimitConfigError('ERR_RL_INVALID_OPTION', 'localBatch.maxShare', 'must be a number in (0, 1]', maxShare);
  }
  return Object.freeze({
    minRate: positiveInteger(minRate, 'ERR_RL_INVALID_OPTION', 'localBatch.minRate', 'must be a positive integer (decisions per second)'),
    holdMs: positiveInteger(holdMs, 'ERR_RL_INVALID_OPTION', 'localBatch.holdMs', 'must be a positive integer number of ms'),
    maxShare,
    maxKeys: positiveInteger(maxKeys, 'ERR_RL_INVALID_OPTION', 'localBatch.maxKeys', 'must be a positive integer'),
  });
}
