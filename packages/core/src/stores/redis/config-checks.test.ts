import { describe, expect, it } from 'vitest';
import type { Diagnostics } from '../../diagnostics.js';
import type { StoreClient } from './clients/store-client.js';
import { checkServerConfig } from './config-checks.js';

/** A client whose masters answer CONFIG GET maxmemory-policy with `policies`; the codes warned. */
function setup(policies: (string | undefined)[]) {
  const codes: string[] = [];
  const diagnostics: Diagnostics = { warn: (code) => void codes.push(code), enabled: () => true };
  const client = { configGet: () => Promise.resolve(policies) } as unknown as StoreClient;
  return { client, diagnostics, codes };
}

describe('checkServerConfig', () => {
  it('a Cluster client that knows no master yet read nothing: unknown (asked again), not "nothing evicts"', async () => {
    const { client, diagnostics, codes } = setup([]);
    expect(await checkServerConfig(client, diagnostics)).toBe('unknown');
    expect(codes).toEqual([]);
  });

  it('names the evicting policies of the masters and warns; undefined when none evicts', async () => {
    const evicting = setup(['noeviction', 'allkeys-lru', undefined]);
    expect(await checkServerConfig(evicting.client, evicting.diagnostics)).toBe('allkeys-lru');
    expect(evicting.codes).toEqual(['WRN_RL_EVICTION_POLICY']);
    const calm = setup(['noeviction', 'noeviction']);
    expect(await checkServerConfig(calm.client, calm.diagnostics)).toBeUndefined();
  });
});
