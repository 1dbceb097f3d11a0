/**
 * @module The ledger of a key's budget charged again after Redis lost its state (RedisStore.restored,
 * failure/restore/budget-restore.ts): a number per key of state, what the processes of a limiter charged it again
 * since the loss, in milli-units, with the same hash tag as that state (key-names.ts `restoredName`). Each
 * process raises it to what it counts for the key and charges only what it held less, so the processes
 * that remember one key charge it together what the one that saw the most had counted, never the sum. It
 * goes with the state it stands for at the next loss, and expires when the key's budget would be whole again.
 *
 * A raise can be sent again when its reply was lost (a connection that dropped after sending it: the
 * limiter asks again, failure/restore/restore-charges.ts). Answered with what the ledger holds then, its own
 * earlier raise, it would owe nothing, and the key would keep budget nobody charges. So a raise may carry
 * an id: the ledger's second key keeps, per id, what the ledger held before that raise, and the same id
 * asked again answers that. The ledger itself stays one number, as a process of an earlier version reads it.
 */
import { defineScript } from './lua-script.js';

/**
 * KEYS[1]: the ledger; KEYS[2]: its raises by id. ARGV: the milli-units to raise it to, its lifetime (ms),
 * and the raise's id ('' for none). Returns what it held before (before that id's first raise), as a string.
 */
export const RESTORED = defineScript(
  'tollgate:restored:v2',
  `if ARGV[3] ~= '' then
  local was = redis.call('HGET', KEYS[2], ARGV[3])
  if was then return was end
end
local before = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > before then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  if ARGV[3] ~= '' then
    redis.call('HSET', KEYS[2], ARGV[3], tostring(before))
    if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
  end
end
return tostring(before)`,
);
