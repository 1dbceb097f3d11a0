/**
 * @module The lease scripts by name: the renew script reads the policy's limit (a late renewal takes the
 * slot again only below it), so its name, which a server caches the script under, must tell limits apart.
 */
import { describe, expect, it } from 'vitest';
import { compilePolicy } from '../../../policy.js';
import type { StorePlan } from '../../store.js';
import { releaseScript, renewScript, restoreScript } from './lease-scripts.js';

/** A plan of one concurrency policy of `limit` leases of 60 s. */
function plan(limit: number): StorePlan {
  const policy = compilePolicy({ name: 'exports', algorithm: 'concurrency', limit, leaseMs: 60_000 }, 'policies[0]', false);
  return Object.freeze({ policies: [policy], enforcedCount: 1 });
}

describe('lease scripts', () => {
  it('names the renew script by the limit too: a late renewal takes the slot again only below it', () => {
    const [two, three] = [plan(2), plan(3)];
    // Before: one name for both (the head named only the policy and its lease time), so a server holding
    // one plan's script would run it for the other's limit.
    expect(renewScript(two).name).not.toBe(renewScript(three).name);
    expect(renewScript(two).lua).toContain("redis.call('ZCARD', KEYS[1]) < 2 then");
    expect(renewScript(three).lua).toContain("redis.call('ZCARD', KEYS[1]) < 3 then");
    // The others do not read the limit: one script for both.
    expect(releaseScript(two).name).toBe(releaseScript(three).name);
    expect(restoreScript(two).name).toBe(restoreScript(three).name);
  });
});
