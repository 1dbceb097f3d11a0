/**
 * @module A Redis that comes back behind (restarted from an older RDB snapshot) after an outage that
 * `'local'` admitted in, on a real redis-server: every key ends at its limit, the outage's admissions
 * counted beside what the server lost, not only the key whose check ended the outage (failure/restore/budget-restore.ts
 * `behind`, failure/answer-memory.ts: what the carries charged is taken off the answers they come with).
 */
import { createLimiter, type Limiter, RedisStore } from '@tollgate/core';
import { expect, it } from 'vitest';
import { type ClientKind, clearOfWindowEnd, describeRedis, randomPrefix, suiteRedis } from './harness.js';

const WINDOW_MS = 600_000;
const LIMIT = 150;
const KEYS = ['k0', 'k1', 'k2', 'k3'] as const;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeRedis('a Redis back from an older snapshot after an outage the failure mode admitted in', () => {
  const server = suiteRedis();

  /** Two check loops per key, a check every 40 ms each, until `stop()`; what each key admitted, per phase. */
  function loops(limiter: Limiter) {
    let stopped = false;
    let phase = 'before';
    const admitted = new Map<string, number>();
    const degraded = new Map<string, number>();
    const count = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
    const running = KEYS.flatMap((key) =>
      [0, 1].map(async () => {
        while (!stopped) {
          const d = await limiter.check(key);
          if (d.allowed) count(admitted, key);
          if (d.allowed && d.degraded) count(degraded, `${phase}:${key}`);
          await sleep(40);
        }
      }),
    );
    return {
      admitted,
      degraded,
      set: (p: string) => {
        phase = p;
      },
      stop: async () => {
        stopped = true;
        await Promise.all(running);
      },
    };
  }

  for (const kind of ['ioredis', 'node-redis'] as const satisfies readonly ClientKind[]) {
    it(`${kind}: four keys checked through a SIGKILL and a restart from the snapshot taken a second before: each admits its limit, the outage's admissions counted on every key (before: 180 to 188 of 150 on the keys whose checks did not end the outage)`, async () => {
      await clearOfWindowEnd(WINDOW_MS, 30_000);
      const warnings: Record<string, unknown>[] = [];
      const limiter = createLimiter({
        name: `outage-behind-${kind}`,
        policies: { algorithm: 'fixed-window', limit: LIMIT, windowMs: WINDOW_MS },
        store: new RedisStore({ client: await server().storeClient(kind), prefix: randomPrefix(), validate: false }),
        logger: { warn: (o: Record<string, unknown>) => warnings.push(o), error() {} },
      });
      const run = loops(limiter);
      await sleep(500);
      // The snapshot (as `save` points or a BGSAVE take it), a second of checks more, then a crash.
      await (await server().readyClient({ retryStrategy: () => 50 })).call('SAVE');
      await sleep(1_000);
      run.set('down');
      server().signal('SIGKILL');
      await server().stop();
      await sleep(500);
      await server().start();
      run.set('after');
      await sleep(4_000);
      await run.stop();
      const total = Object.fromEntries(KEYS.map((key) => [key, run.admitted.get(key) ?? 0]));
      const outage = Object.fromEntries(KEYS.map((key) => [key, run.degraded.get(`down:${key}`) ?? 0]));
      const seen = `admitted ${JSON.stringify(total)}, in the outage ${JSON.stringify(outage)}`;
      // The failure mode admitted on every key while Redis was down (its record had room): 24 to 28 each.
      for (const key of KEYS) expect(outage[key], seen).toBeGreaterThan(0);
      // The charge is exact for a plan of one policy: 150 on every key in the runs so far; one more where
      // a check answered after a crash it ran before counts among the outage's admissions.
      for (const key of KEYS) expect(total[key], seen).toBeLessThanOrEqual(LIMIT + 1);
      for (const key of KEYS) expect(total[key], seen).toBeGreaterThanOrEqual(LIMIT - 2);
      expect(warnings).toContainEqual(expect.objectContaining({ code: 'WRN_RL_BUDGETS_RESTORED', behind: true }));
      await limiter.close();
    }, 60_000);
  }
});
