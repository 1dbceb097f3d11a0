/**
 * @module What happens when the script finds a limiter key holding a value it never writes: a foreign
 * writer, a hand edit, a value of another type, a number out of range (a TAT of 1e30, a negative count),
 * a key without expiry. The script reads such a key as one never seen, deletes it (so no key it touched
 * lives without a TTL), decides the request on fresh state, and appends to its reply a mask of the policies
 * whose key it repaired. The store turns the mask into the `onStateRepaired` event, every time, and one
 * `WRN_RL_CORRUPT_STATE` warning per store: never an error, never a negative wait.
 */
import { seeDocs } from '../../errors.js';
import { safeLog } from '../../logging.js';
import { keyAt, type StoreKey, type StorePlan } from '../store.js';
import type { StoreLog } from '../store-log.js';

/** One limiter key the script repaired. */
export interface RepairedState {
  /** The limiter key (as the limiter's `key` function gave it). */
  readonly key: string;
  /** The policy whose state it was. */
  readonly policy: string;
  /** The Redis key the script deleted. */
  readonly keyName: string;
}

/** Tells the app, once in the log and every time through `onStateRepaired`, which keys were repaired. */
export class RepairReporter {
  private warned = false;

  constructor(
    /** The store's warnings (stores/store-log.ts): the logger and `validate` in force when a repair comes. */
    private readonly log: StoreLog,
    private readonly hook: ((event: RepairedState) => void) | undefined,
  ) {}

  /** `mask` has bit `i` set for the policy at plan position `i`; `names` holds the Redis keys in plan order. */
  report(key: StoreKey, plan: StorePlan, names: readonly string[], mask: number): void {
    for (let i = 0; i < plan.policies.length; i++) {
      if (Math.floor(mask / 2 ** i) % 2 === 0) continue;
      const event: RepairedState = { key: keyAt(key, i), policy: plan.policies[i]?.name ?? '', keyName: names[i] ?? '' };
      if (!this.warned && this.log.enabled('WRN_RL_CORRUPT_STATE')) {
        this.warned = true;
        safeLog(
          this.log.logger,
          'warn',
          { code: 'WRN_RL_CORRUPT_STATE', ...event },
          'WRN_RL_CORRUPT_STATE: a limiter key held a value tollgate never writes (another program writing under the ' +
            "store's prefix, a hand edit, or a value of another type); the key was read as never seen and deleted, " +
            `and the request decided on fresh state. Later repairs reach onStateRepaired only. ${seeDocs('WRN_RL_CORRUPT_STATE')}`,
        );
      }
      if (this.hook !== undefined) {
        try {
          this.hook(event);
        } catch {
          // The app's hook must not turn a decision into an error.
        }
      }
    }
  }
}
