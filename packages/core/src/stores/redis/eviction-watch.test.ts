import { describe, expect, it } from 'vitest';
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
