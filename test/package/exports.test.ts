/**
 * @module The built @tollgate/core as users get it: `import` and `require` by package name (through the
 * `exports` map, without the `@tollgate/source` condition) load dist/, expose the same named exports,
 * and work. Every file the exports map points at exists. Needs `pnpm build` first (the root `pnpm test`
 * runs it).
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const coreDir = join(here, '..', '..', 'packages', 'core');

interface Loaded {
  resolved: string;
  name?: string;
  exports: Record<string, string>;
  adapterExports: Record<string, string>;
  adapterResolved: string;
  decision: { allowed: boolean; remaining: number; policy: string };
  configError: { name: string; code: string; isTypeError: boolean };
}

/** Runs a fixture with plain `node` (no custom conditions) and parses what it printed. */
async function load(fixture: string): Promise<Loaded> {
  const { stdout, stderr } = await run(process.execPath, [join(here, 'fixtures', fixture)], { timeout: 20_000 });
  expect(stderr).toBe('');
  return JSON.parse(stdout) as Loaded;
}

beforeAll(() => {
  if (!existsSync(join(coreDir, 'dist', 'index.mjs'))) {
    throw new Error('packages/core/dist is missing: run `pnpm build` first (the root `pnpm test` does)');
  }
});

describe('@tollgate/core, built', () => {
  it('the exports map points at files that exist, types first', () => {
    const manifest = JSON.parse(readFileSync(join(coreDir, 'package.json'), 'utf8'));
    const root = manifest.exports['.'];
    expect(Object.keys(root)).toEqual(['@tollgate/source', 'import', 'require']);
    expect(Object.keys(root.import)).toEqual(['types', 'default']);
    expect(Object.keys(root.require)).toEqual(['types', 'default']);
    const targets = [
      root.import.types,
      root.import.default,
      root.require.types,
      root.require.default,
      manifest.main,
      manifest.module,
      manifest.types,
    ];
    expect(targets.filter((t: string) => !existsSync(join(coreDir, t)))).toEqual([]);
    expect(manifest.files).toEqual(['dist']);
  });

  it('import by package name loads dist/index.mjs', async () => {
    const esm = await load('esm.mjs');
    expect(esm.resolved).toMatch(/\/packages\/core\/dist\/index\.mjs$/);
    expect(esm.decision).toEqual({ allowed: true, remaining: 1, policy: 'default' });
    expect(esm.configError).toEqual({ name: 'RateLimitConfigError', code: 'ERR_RL_INVALID_LIMIT', isTypeError: true });
  });

  it('require by package name loads dist/index.cjs', async () => {
    const cjs = await load('cjs.cjs');
    expect(cjs.resolved).toMatch(/\/packages\/core\/dist\/index\.cjs$/);
    expect(cjs.name).toBe('@tollgate/core');
    expect(cjs.decision).toEqual({ allowed: true, remaining: 1, policy: 'default' });
    expect(cjs.configError).toEqual({ name: 'RateLimitConfigError', code: 'ERR_RL_INVALID_LIMIT', isTypeError: true });
  });

  it('both expose the same named exports (no default export)', async () => {
    const [esm, cjs] = await Promise.all([load('esm.mjs'), load('cjs.cjs')]);
    expect(cjs.exports).toEqual(esm.exports);
    expect(esm.exports).toMatchInlineSnapshot(`
      {
        "DECISION_CHANNEL": "string",
        "DEFAULT_CALLBACK_TIMEOUT_MS": "number",
        "DEFAULT_HOOK_TIMEOUT_MS": "number",
        "DEFAULT_LOG_RATE": "object",
        "DEFAULT_SHARES": "object",
        "DOCS_URL": "string",
        "GradientLimit": "function",
        "HEADER_MODES": "object",
        "MAX_KEY_LENGTH": "number",
        "METER_NAME": "string",
        "METRICS": "object",
        "MIN_PARTITION_KEY_SECRET_BYTES": "number",
        "MemoryStore": "function",
        "OVERLOADED_TYPE": "string",
        "PARTITION_KEY_BYTES": "number",
        "PROBLEMS_URL": "string",
        "PROBLEM_CONTENT_TYPE": "string",
        "PROBLEM_STATUS": "object",
        "PROBLEM_TYPES": "object",
        "RESULTS": "object",
        "RateLimitConfigError": "function",
        "RedisStore": "function",
        "RedisStoreError": "function",
        "SHED_POLICY": "string",
        "SHED_PRIORITIES": "object",
        "StoreTimeoutError": "function",
        "TRUSTED_PROXY_PRESETS": "object",
        "WARNING_CODES": "object",
        "boundedCost": "function",
        "consoleLogger": "object",
        "createLimiter": "function",
        "createLoadShedder": "function",
        "keys": "object",
        "monotonicClock": "function",
        "registerPrometheusMetrics": "function",
        "reportInFlight": "function",
      }
    `);
  });

  it('the adapter entry, @tollgate/core/adapter, loads from dist/ and holds only what adapter and store authors need', async () => {
    const [esm, cjs] = await Promise.all([load('esm.mjs'), load('cjs.cjs')]);
    expect(esm.adapterResolved).toMatch(/\/packages\/core\/dist\/adapter\.mjs$/);
    expect(cjs.adapterResolved).toMatch(/\/packages\/core\/dist\/adapter\.cjs$/);
    expect(cjs.adapterExports).toEqual(esm.adapterExports);
    // No name is in both entries: one home per name.
    expect(Object.keys(esm.adapterExports).filter((name) => name in esm.exports)).toEqual([]);
    expect(esm.adapterExports).toMatchInlineSnapshot(`
      {
        "OLDER_SPELLINGS": "object",
        "PERMISSIVE_TRUST_DEPTH": "number",
        "UNKEYED_KEY": "string",
        "abortOnClose": "function",
        "createDiagnostics": "function",
        "createRateLimitHandler": "function",
        "escapeControl": "function",
        "formatLine": "function",
        "headerValue": "function",
        "isPermissiveTrust": "function",
        "isPermissiveTrustFunction": "function",
        "isPlainKey": "function",
        "isPromiseLike": "function",
        "onHandlerSettled": "function",
        "onResponseDone": "function",
        "parseRateLimitOptions": "function",
        "planShed": "function",
        "requestCostToMilli": "function",
        "respond": "function",
        "resultCharged": "function",
        "resultDelayMs": "function",
        "resultExceeds": "function",
        "retryAfterSeconds": "function",
        "setReasonPhrase": "function",
        "waitUnlessClosed": "function",
        "xForwardedForNode": "function",
      }
    `);
  });

  it('the declaration files export the same names, runtime and types', async () => {
    const declared = ['index.d.mts', 'index.d.cts'].map((file) => {
      const dts = readFileSync(join(coreDir, 'dist', file), 'utf8');
      const list = /export \{([^}]*)\};?\s*$/.exec(dts)?.[1] ?? '';
      return list
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '')
        .sort();
    });
    expect(declared[1]).toEqual(declared[0]);
    const runtime = Object.keys((await load('esm.mjs')).exports);
    expect(declared[0]?.filter((s) => !s.startsWith('type ')).sort()).toEqual(runtime.sort());
    expect(declared[0]).toMatchInlineSnapshot(`
      [
        "DECISION_CHANNEL",
        "DEFAULT_CALLBACK_TIMEOUT_MS",
        "DEFAULT_HOOK_TIMEOUT_MS",
        "DEFAULT_LOG_RATE",
        "DEFAULT_SHARES",
        "DOCS_URL",
        "GradientLimit",
        "HEADER_MODES",
        "MAX_KEY_LENGTH",
        "METER_NAME",
        "METRICS",
        "MIN_PARTITION_KEY_SECRET_BYTES",
        "MemoryStore",
        "OVERLOADED_TYPE",
        "PARTITION_KEY_BYTES",
        "PROBLEMS_URL",
        "PROBLEM_CONTENT_TYPE",
        "PROBLEM_STATUS",
        "PROBLEM_TYPES",
        "RESULTS",
        "RateLimitConfigError",
        "RedisStore",
        "RedisStoreError",
        "SHED_POLICY",
        "SHED_PRIORITIES",
        "StoreTimeoutError",
        "TRUSTED_PROXY_PRESETS",
        "WARNING_CODES",
        "boundedCost",
        "consoleLogger",
        "createLimiter",
        "createLoadShedder",
        "keys",
        "monotonicClock",
        "registerPrometheusMetrics",
        "reportInFlight",
        "type AdaptiveLimitOptions",
        "type AffectedKey",
        "type AlgorithmId",
        "type AnyPolicyOptions",
        "type BoundedCostOptions",
        "type BreakerOptions",
        "type ChargeReceipt",
        "type CheckOptions",
        "type Clock",
        "type ConcurrencyPolicyOptions",
        "type CostFunction",
        "type Decision",
        "type DecisionMessage",
        "type DecisionReason",
        "type EvictionWatchOptions",
        "type FinishedResponse",
        "type ForwardingHeader",
        "type HeaderBag",
        "type HeaderKeyOptions",
        "type HeaderMode",
        "type HeadersOption",
        "type HotKey",
        "type HotKeysOptions",
        "type HotKeysReport",
        "type IdFunction",
        "type InFlightPoint",
        "type InFlightSource",
        "type IpKeyOptions",
        "type KeyFunction",
        "type KeyId",
        "type LimitChange",
        "type LimitedBody",
        "type LimitedContext",
        "type Limiter",
        "type LimiterEvents",
        "type LimiterKey",
        "type LimiterOptions",
        "type LimiterStats",
        "type LoadShedder",
        "type LoadShedderOptions",
        "type LoadShedderState",
        "type LogFields",
        "type LogFn",
        "type LogRateOptions",
        "type Logger",
        "type MemoryStoreOptions",
        "type MetricDescriptor",
        "type NodeRedisClientLike",
        "type NodeRedisClusterLike",
        "type NodeRedisSentinelLike",
        "type PartitionKeyOptions",
        "type PlanOptions",
        "type PolicyDescription",
        "type PolicyOptions",
        "type PolicyResult",
        "type PolicyStats",
        "type ProblemDetails",
        "type ProblemKind",
        "type ProblemOptions",
        "type PromCollector",
        "type PromRegistryLike",
        "type PromSample",
        "type PrometheusOptions",
        "type QuotaUnit",
        "type RateLimitOptions",
        "type RedisClientLike",
        "type RedisStoreClient",
        "type RedisStoreErrorCode",
        "type RedisStoreOptions",
        "type RefundOptions",
        "type RefundResult",
        "type RepairedState",
        "type RequestView",
        "type ResultName",
        "type SendCommandClient",
        "type ShadowInterval",
        "type ShadowOptions",
        "type ShadowPolicyStats",
        "type ShadowVerdict",
        "type ShedPriority",
        "type ShedTicket",
        "type Store",
        "type StoreKey",
        "type StorePlan",
        "type StoreResult",
        "type TrustedProxyEntry",
        "type TrustedProxyPreset",
        "type ValidateOption",
        "type WarningCode",
      ]
    `);
  });
});
