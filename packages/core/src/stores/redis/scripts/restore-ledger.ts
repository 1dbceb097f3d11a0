/**
 * @module The ledger of a key's budget charged again after Redis lost its state (RedisStore.restored,
 * limiter/budget-restore.ts): a number per key of state, what the processes of a limiter charged it again
 * since the loss, in milli-units, with the same hash tag as that state (key-names.ts `restoredName`). Each
 * process raises it to what it counts for the key and charges only what it held less, so the processes
 * that remember one key charge it together what the one that saw the most had counted, never the sum. It
 * goes with the state it stands for at the next loss, and expires when the key's budget would be whole again.
 */
import { defineScript } from './lua-script.js';

/** KEYS[1]: the ledger. ARGV: the milli-units to raise it to, and its lifetime (ms). Returns what it held before, as a string. */
export const RESTORED = defineScript(
  'tollgate:restored:v1',
  `local before = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > before then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) end
return tostring(before)`,
);
