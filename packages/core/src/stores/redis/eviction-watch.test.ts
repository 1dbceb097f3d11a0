import { afterEach, describe, expect, it, vi } from 'vitest';
import type { LogFields } from '../../logging.js';
import { counterCell } from '../../observability/metric-store.js';
import type { NodeInfo } from './clients/store-client.js';
import { EvictionWatch, evictedKeys, runId } from './eviction-watch.js';

/** A watch over counters the test sets, on a clock the test moves; readings by hand (`read()`), no timer. */
function setup(logIntervalMs = 60_000, warn = true) {
  const counters = new Map<string, number | undefined>([['redis', 0]]);
  const lines: { fields: LogFields; message: string }[] = [];
  const clock = { now: 0 };
  const watch = new EvictionWatch({
    intervalMs: 10_000,
    logIntervalMs,
    info: async (): Promise<NodeInfo[]> =>
      [...counters].map(([node, v]) => ({
        node,
        text: v === undefined ? undefined : `# Stats\r\nexpired_keys:3\r\nevicted_keys:${v}\r\n`,
      })),
    policy: 'allkeys-lru',
    logger: { warn: (fields, message) => lines.push({ fields, message }), error() {} },
    warn,
    takeUse: () => true,
    now: () => clock.now,
  });
  return { counters, lines, clock, watch };
}

describe('evictedKeys', () => {
  it('reads evicted_keys from an INFO stats reply, never a field that ends with the same name', () => {
    expect(evictedKeys('# Stats\r\nevicted_keys:42\r\n')).toBe(42);
    expect(evictedKeys('evicted_keys:7')).toBe(7);
    expect(evictedKeys('# Stats\r\nnot_evicted_keys:9\r\n')).toBeUndefined();
    expect(evictedKeys(undefined)).toBeUndefined();
  });
});

describe('EvictionWatch', () => {
  it("counts a server's evictions once in the process-wide series, however many stores of the process watch it", async () => {
    const metric = counterCell('storeEvictions', { storeKind: 'redis' });
    let evicted = 100;
    const watch = () =>
      new EvictionWatch({
        intervalMs: 10_000,
        logIntervalMs: 60_000,
        info: async (): Promise<NodeInfo[]> => [
          { node: 'redis', text: `# Server\r\nrun_id:4f2a9c\r\n# Stats\r\nevicted_keys:${evicted}\r\n` },
        ],
        policy: 'allkeys-lru',
        logger: { warn() {}, error() {} },
        warn: false,
        takeUse: () => true,
      });
    const [a, b] = [watch(), watch()];
    await a.read();
    evicted = 130;
    await b.read();
    const start = metric.value;
    evicted = 150;
    await a.read();
    await b.read();
    // Each store sees its own growth (a: 100 -> 150, b: 130 -> 150); the series counts the server's once.
    expect([a.evictions, b.evictions]).toEqual([50, 20]);
    expect(metric.value - start).toBe(20);
    expect(runId('# Server\r\nredis_version:7.0.15\r\nrun_id:4f2a9c\r\n')).toBe('4f2a9c');
    expect(runId('# Stats\r\nevicted_keys:1\r\n')).toBeUndefined();
    // CONFIG RESETSTAT: the counter starts over on the same run_id; what it counts again is new.
    evicted = 0;
    await a.read();
    evicted = 40;
    await b.read();
    expect(metric.value - start).toBe(60);
  });

  it('takes the first reading as the baseline, then counts what grew', async () => {
    const { counters, watch, lines } = setup();
    counters.set('redis', 500);
    expect(await watch.read()).toBe(0);
    counters.set('redis', 530);
    expect(await watch.read()).toBe(30);
    expect(await watch.read()).toBe(0);
    expect(watch.evictions).toBe(30);
    expect(lines).toHaveLength(1);
    expect(lines[0]?.fields).toMatchObject({ code: 'WRN_RL_STORE_EVICTING', evicted: 30, maxmemoryPolicy: 'allkeys-lru' });
    expect(lines[0]?.message).toMatch(/^WRN_RL_STORE_EVICTING: Redis evicted 30 keys .*noeviction.*#wrn_rl_store_evicting$/);
  });

  it('logs at most one line per logIntervalMs, each with the count since the last line', async () => {
    const { counters, watch, lines, clock } = setup(60_000);
    await watch.read();
    for (let i = 1; i <= 12; i++) {
      clock.now = i * 10_000;
      counters.set('redis', i * 100);
      await watch.read();
    }
    // Evictions at 10 s .. 120 s: a line at 10 s (100), then at 70 s (600: 20 s .. 70 s); 80 s .. 120 s wait.
    expect(lines.map((l) => l.fields.evicted)).toEqual([100, 600]);
    expect(lines[1]?.message).toMatch(/in the last 60 s/);
    expect(watch.evictions).toBe(1200);
    clock.now = 130_000;
    await watch.read();
    expect(lines.map((l) => l.fields.evicted)).toEqual([100, 600, 500]);
  });

  it('counts per node, takes a counter that went down as reset, and skips nodes without the field', async () => {
    const { counters, watch, lines } = setup(1);
    counters.delete('redis');
    counters.set('10.0.0.1:7000', 10);
    counters.set('10.0.0.2:7000', 20);
    counters.set('10.0.0.3:7000', undefined);
    await watch.read();
    counters.set('10.0.0.1:7000', 15);
    counters.set('10.0.0.2:7000', 4); // restarted: 4 since
    expect(await watch.read()).toBe(9);
    expect(lines[0]?.fields.nodes).toEqual(['10.0.0.1:7000', '10.0.0.2:7000']);
    expect(lines[0]?.message).toMatch(/allkeys-lru; 10\.0\.0\.1:7000, 10\.0\.0\.2:7000/);
  });

  it('still counts with the line switched off, and never rejects when INFO fails', async () => {
    const { counters, watch, lines } = setup(1, false);
    await watch.read();
    counters.set('redis', 3);
    expect(await watch.read()).toBe(3);
    expect(lines).toHaveLength(0);
    const failing = new EvictionWatch({
      intervalMs: 10,
      logIntervalMs: 10,
      info: () => Promise.reject(new Error('NOPERM')),
      policy: 'unknown',
      logger: { warn() {}, error() {} },
      warn: true,
      takeUse: () => true,
    });
    expect(await failing.read()).toBe(0);
  });
});

/**
 * A watch on a timer the test moves (vitest fake timers; `now` reads the faked Date), over one server whose
 * policy, `run_id` and counter the test sets: counts the INFO readings and the policy checks.
 */
function following(policy: string | undefined, warnPolicy = true) {
  const server = { policy, runId: 'aaa', evicted: 0 };
  const calls = { info: 0, policy: 0 };
  const lines: LogFields[] = [];
  let used = true;
  const watch = new EvictionWatch({
    intervalMs: 10_000,
    logIntervalMs: 1,
    policyIntervalMs: 30_000,
    info: async (): Promise<NodeInfo[]> => {
      calls.info++;
      return [{ node: 'redis', text: `# Server\r\nrun_id:${server.runId}\r\n# Stats\r\nevicted_keys:${server.evicted}\r\n` }];
    },
    policy,
    checkPolicy: async () => {
      calls.policy++;
      return server.policy;
    },
    logger: { warn: (fields) => lines.push(fields), error() {} },
    warn: true,
    warnPolicy,
    takeUse: () => {
      const u = used;
      used = false;
      return u;
    },
    now: () => Date.now(),
  });
  const policyLines = () => lines.filter((l) => l.code === 'WRN_RL_EVICTION_POLICY');
  /** `ms` of virtual time with the store in use: a call before every tick. */
  const busy = async (ms: number) => {
    let t = 0;
    do {
      used = true;
      await vi.advanceTimersByTimeAsync(Math.min(5_000, ms - t));
      t += 5_000;
    } while (t < ms);
  };
  return { server, calls, lines, policyLines, watch, busy, idle: (ms: number) => vi.advanceTimersByTimeAsync(ms) };
}

describe('EvictionWatch follows the policy', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('asks the policy every policyIntervalMs while in use, and counts from the baseline what Redis evicted after a live CONFIG SET', async () => {
    vi.useFakeTimers();
    const { server, calls, lines, policyLines, watch, busy } = following(undefined);
    watch.start();
    await busy(0);
    // Under noeviction: the baseline, then nothing until the policy check is due.
    expect(calls).toEqual({ info: 1, policy: 0 });
    await busy(25_000);
    expect(calls).toEqual({ info: 1, policy: 0 });
    // CONFIG SET maxmemory-policy allkeys-lru, then Redis evicts 500 keys before the watch asks.
    server.policy = 'allkeys-lru';
    server.evicted = 500;
    await busy(5_000);
    expect(calls).toEqual({ info: 2, policy: 1 });
    expect(watch.policy).toBe('allkeys-lru');
    expect(watch.evictions).toBe(500);
    expect(policyLines()).toEqual([expect.objectContaining({ maxmemoryPolicy: 'allkeys-lru', was: 'noeviction' })]);
    expect(lines.find((l) => l.code === 'WRN_RL_STORE_EVICTING')).toMatchObject({ evicted: 500, maxmemoryPolicy: 'allkeys-lru' });
    // Evicting: a reading every intervalMs; the same policy asked again says nothing more.
    server.evicted = 650;
    await busy(60_000);
    expect(watch.evictions).toBe(650);
    expect(calls.info).toBe(2 + 6); // one per tick, two of them with a policy check
    expect(calls.policy).toBe(3);
    expect(policyLines()).toHaveLength(1);
    // Back to noeviction: the readings slow down to the policy checks; evicting again is one more line.
    server.policy = undefined;
    await busy(30_000);
    const quiet = calls.info;
    await busy(25_000);
    expect(calls.info).toBe(quiet);
    server.policy = 'volatile-lfu';
    await busy(10_000);
    expect(policyLines().map((l) => l.maxmemoryPolicy)).toEqual(['allkeys-lru', 'volatile-lfu']);
    watch.close();
  });

  it('asks at once when the client is ready again, or at the next call when the store is unused', async () => {
    vi.useFakeTimers();
    const { server, calls, policyLines, watch, busy, idle } = following(undefined);
    watch.start();
    await busy(1_000);
    server.policy = 'allkeys-lru';
    watch.reconnected();
    await busy(0);
    expect(calls).toEqual({ info: 2, policy: 1 });
    expect(policyLines()).toHaveLength(1);
    // Unused for an interval the timer stops; a reconnect then waits for the next call, which asks.
    server.policy = undefined;
    await idle(30_000);
    expect(watch.running).toBe(false);
    const before = { ...calls };
    watch.reconnected();
    await idle(0);
    expect(calls).toEqual(before);
    watch.start();
    await busy(0);
    expect(calls.policy).toBe(before.policy + 1);
    expect(watch.policy).toBeUndefined();
    watch.close();
  });

  it('asks again when INFO shows another server (run_id), and keeps an evicting policy while CONFIG fails', async () => {
    vi.useFakeTimers();
    const { server, calls, policyLines, watch, busy } = following('allkeys-lru', false);
    watch.start();
    await busy(10_000);
    expect(calls.policy).toBe(0);
    // A restart (another run_id, the counter from 0) with noeviction: asked at the next reading.
    server.runId = 'bbb';
    server.policy = undefined;
    await busy(10_000);
    expect(calls.policy).toBe(1);
    expect(watch.policy).toBeUndefined();
    // Another restart with allkeys-lru: under noeviction the watch reads only with the policy checks, and learns it then.
    server.runId = 'ccc';
    server.policy = 'allkeys-lru';
    await busy(30_000);
    expect(watch.policy).toBe('allkeys-lru');
    expect(policyLines()).toHaveLength(0); // warnPolicy: false
    server.policy = 'unknown';
    await busy(30_000);
    expect(watch.policy).toBe('allkeys-lru');
    watch.close();
  });

  it('does not ask a server that refuses CONFIG (a managed Redis) every policyIntervalMs; a reconnect asks it once', async () => {
    vi.useFakeTimers();
    const { server, calls, watch, busy } = following('unknown');
    server.policy = 'unknown';
    watch.start();
    await busy(120_000);
    // Before: a refused CONFIG GET every 30 s for as long as the store was used.
    expect(calls.policy).toBe(0);
    // Read every intervalMs, as a policy CONFIG would not show.
    expect(calls.info).toBeGreaterThanOrEqual(12);
    watch.reconnected();
    await busy(0);
    expect(calls.policy).toBe(1);
    await busy(60_000);
    expect(calls.policy).toBe(1);
    watch.close();
  });
});
