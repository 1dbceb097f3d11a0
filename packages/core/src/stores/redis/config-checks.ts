/**
 * @module Checks of what silently breaks limits, made once per store. At construction, the client's
 * options: ioredis `stringNumbers: true` turns every script reply into strings (an error with a code),
 * and ioredis' `autoResendUnfulfilledCommands` (on by default) sends again, after a reconnect, the
 * EVALSHA calls Redis may already have run, charging those requests twice (a warning with the option to
 * set; ioredis has no way to switch it off per command), and an ioredis Sentinel client without
 * `failoverDetector` writes to a demoted master for seconds after a failover (a warning). On the first connection, the server: a
 * `maxmemory-policy` that may evict keys (`allkeys-*`, `volatile-*`) deletes limiter state under memory
 * pressure, so clients get their full budget again (a warning with the fix, `noeviction`).
 */
import type { Diagnostics } from '../../diagnostics.js';
import { RateLimitConfigError } from '../../errors.js';
import type { StoreClient } from './clients/store-client.js';

/** maxmemory-policy values under which Redis may delete limiter keys to free memory. */
export function evicts(policy: string): boolean {
  return policy.startsWith('allkeys-') || policy.startsWith('volatile-');
}

/** Throws `ERR_RL_CLIENT_STRING_NUMBERS`; warns `WRN_RL_CLIENT_RESENDS` and `WRN_RL_SENTINEL_NO_FAILOVER_DETECTOR`. */
export function checkClientSettings(client: StoreClient, diagnostics: Diagnostics): void {
  if (client.settings.stringNumbers === true) {
    throw new RateLimitConfigError(
      'ERR_RL_CLIENT_STRING_NUMBERS',
      'client',
      "is an ioredis client with stringNumbers: true, which turns the script's integer replies into strings; " +
        'give RedisStore a client without it (a second connection if the app needs it elsewhere)',
      'a client with stringNumbers: true',
    );
  }
  if (client.settings.resendsAfterReconnect === true) {
    diagnostics.warn(
      'WRN_RL_CLIENT_RESENDS',
      'the ioredis client sends again, after a reconnect, the commands that were on their way when the connection ' +
        'dropped (autoResendUnfulfilledCommands, on by default); Redis may already have run them, so those requests ' +
        'would be charged twice. Create the client with { autoResendUnfulfilledCommands: false } ' +
        '(for a Cluster: { redisOptions: { autoResendUnfulfilledCommands: false } }).',
    );
  }
  if (client.settings.sentinelWithoutFailoverDetector === true) {
    diagnostics.warn(
      'WRN_RL_SENTINEL_NO_FAILOVER_DETECTOR',
      'the ioredis client finds its master through Sentinel without failoverDetector: after a failover it keeps ' +
        'writing to the demoted master for about 10 s (until the sentinel reconfigures it), and those writes, the ' +
        "limiter's charges among them, are lost when it becomes a replica. Create the client with " +
        '{ sentinels, name, failoverDetector: true }: it then follows +switch-master at once.',
    );
  }
}

/** What an evicting policy does to limiter state, in both WRN_RL_EVICTION_POLICY lines (here and eviction-watch.ts). */
export const EVICTION_CONSEQUENCE =
  'when it reaches maxmemory it deletes keys, limiter state among them, and the clients behind those keys get their whole budget again, with no error.';

/**
 * Reads `maxmemory-policy` on every master and warns `WRN_RL_EVICTION_POLICY` when one may evict.
 * Never rejects: a server that refuses CONFIG (managed Redis often does) is simply not checked.
 * Resolves to the evicting policies (`'allkeys-lru'`), `'unknown'` when CONFIG was refused or no master
 * was known to ask (the store asks again, then watches for eviction anyway, eviction-watch.ts), or
 * undefined when no master evicts.
 */
export async function checkServerConfig(client: StoreClient, diagnostics: Diagnostics): Promise<string | undefined> {
  let policies: (string | undefined)[];
  try {
    policies = await client.configGet('maxmemory-policy');
  } catch {
    return 'unknown';
  }
  // A Cluster client that lists no master yet read nothing: no sign that nothing evicts.
  if (policies.length === 0) return 'unknown';
  const evicting = [...new Set(policies.filter((p): p is string => p !== undefined && evicts(p)))];
  if (evicting.length === 0) return undefined;
  diagnostics.warn(
    'WRN_RL_EVICTION_POLICY',
    `Redis runs with maxmemory-policy ${evicting.join(', ')}: ${EVICTION_CONSEQUENCE} ` +
      'Set maxmemory-policy noeviction on the Redis that holds limiter state (CONFIG SET maxmemory-policy noeviction, ' +
      'and in redis.conf), or give the limiter a Redis of its own.',
  );
  return evicting.join(', ');
}
