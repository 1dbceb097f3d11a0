/**
 * @module Issue 12: `@opentelemetry/api` and `prom-client` are optional peers. In a process where
 * neither can be resolved, the limiter and the adapters work as before: decisions, hot keys, the
 * shadow record and the diagnostics channel; only the Prometheus bridge says what is missing.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const TEST_DIR = fileURLToPath(new URL('..', import.meta.url));

// Runs in a child process: the resolver refuses both packages as if they were not installed.
const script = `
import Module from 'node:module';
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (request === '@opentelemetry/api' || request === 'prom-client') {
    const error = new Error("Cannot find module '" + request + "'");
    error.code = 'MODULE_NOT_FOUND';
    throw error;
  }
  return resolve.call(this, request, ...rest);
};
const { subscribe } = await import('node:diagnostics_channel');
const core = await import('@tollgate/core');
let published = 0;
subscribe(core.DECISION_CHANNEL, () => { published += 1; });
const limiter = core.createLimiter({
  policies: [{ name: 'live', limit: 2, windowMs: 60000 }],
  shadow: { policies: [{ name: 'next', limit: 1, windowMs: 60000 }] },
  hotKeys: true,
});
const verdicts = [];
for (let i = 0; i < 4; i++) verdicts.push((await limiter.check('k')).reason);
let bridge;
try {
  core.registerPrometheusMetrics();
} catch (error) {
  bridge = error.code;
}
console.log(JSON.stringify({ verdicts, published, hot: limiter.hotKeys(1).rejected[0], shadow: limiter.stats().shadow[0].wouldBlock, bridge }));
`;

describe('without the optional peers', () => {
  it('decides, publishes and keeps hot keys and shadow numbers; the Prometheus bridge throws a coded error', async () => {
    const { stdout } = await run(
      process.execPath,
      ['--conditions=@tollgate/source', '--import', 'tsx', '--input-type=module', '-e', script],
      {
        cwd: TEST_DIR,
        timeout: 30_000,
      },
    );
    expect(JSON.parse(stdout)).toEqual({
      verdicts: ['allowed', 'allowed', 'limited', 'limited'],
      published: 4,
      hot: { key: 'k', count: 2, error: 0, policy: 'live', remaining: 0 },
      shadow: 3,
      bridge: 'ERR_RL_PROM_CLIENT_MISSING',
    });
  });
});
