import { afterEach, describe, expect, it, vi } from 'vitest';
import { compilePolicy } from '../policy.js';
import { MemoryStore } from '../stores/memory-store.js';
import { StoreGuard } from './store-guard.js';

afterEach(() => {
  vi.useRealTimers();
});

function guard(): StoreGuard {
  const g = new StoreGuard({
    store: new MemoryStore({ sweepIntervalMs: 0 }),
    plan: { policies: [compilePolicy({ limit: 5, windowMs: 1_000 }, 'p', false)], enforcedCount: 1 },
    storeTimeoutMs: 100,
    breaker: false,
    logger: { warn() {}, error() {} },
    onStoreError: 'local',
    now: () => 0,
    onBreaker() {},
  });
  // The MemoryStore has no first connection to wait for.
  expect(g.starting()).toBeUndefined();
  return g;
}

/** When the checks held by `g` may go (ms after now), or -1 while they still wait after `limit` ms. */
async function releasedAfter(g: StoreGuard, limit = 1_000): Promise<number> {
  const start = Date.now();
  let gone = false;
  void g.starting()?.then(() => {
    gone = true;
  });
  for (let t = 0; t <= limit; t += 10) {
    if (gone) return Date.now() - start;
    await vi.advanceTimersByTimeAsync(10);
  }
  return gone ? Date.now() - start : -1;
}

describe('StoreGuard.holdFor', () => {
  it('a hold made while another runs waits for that one too: a charge held after a question is not cut short when the question settles', async () => {
    vi.useFakeTimers();
    const g = guard();
    let charged!: () => void;
    g.holdFor(new Promise<void>((r) => (charged = r)));
    // A quick question after it (a mark asked): settles at once, but the charge before it has not.
    g.holdFor(Promise.resolve());
    await vi.advanceTimersByTimeAsync(20);
    expect(g.starting()).toBeDefined();
    charged();
    expect(await releasedAfter(g)).toBeLessThanOrEqual(10);
    expect(g.starting()).toBeUndefined();
  });

  it('holds that never settle, one after another, hold a check at most their bound (HOLD_MS, or storeTimeoutMs when longer) from the latest, not their sum', async () => {
    vi.useFakeTimers();
    const g = guard();
    for (let i = 0; i < 5; i++) {
      g.holdFor(new Promise(() => {}));
      await vi.advanceTimersByTimeAsync(50);
    }
    // The latest was made 50 ms ago: 50 more at most.
    const waited = await releasedAfter(g);
    expect(waited).toBeGreaterThan(0);
    expect(waited).toBeLessThanOrEqual(60);
  });
});
