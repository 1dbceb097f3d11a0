import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLimiter } from '../../limiter/create-limiter.js';
import type { Limiter } from '../../limiter/limiter.js';
import { ProcessStore, Shared } from '../../testing/shared-store.js';
import type { PolicyOptions } from '../../types.js';

/** Timers, `Date` and `performance.now()` in virtual time: the limiter's clock is `Date.now`. */
const FAKE: NonNullable<Parameters<typeof vi.useFakeTimers>[0]>['toFake'] = ['setTimeout', 'clearTimeout', 'Date', 'performance'];

const quiet = { warn() {}, error() {} };

function limiterOn(store: ProcessStore, policies: PolicyOptions = { algorithm: 'fixed-window', limit: 10, windowMs: 60_000 }): Limiter {
  return createLimiter({ name: 'restore', policies, store, clock: () => Date.now(), logger: quiet, storeTimeoutMs: 100 });
}

/** Lets every promise and zero-time timer run, without moving the clock. */
const settle = () => vi.advanceTimersByTimeAsync(0);

async function use(limiter: Limiter, key: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) expect((await limiter.check(key)).allowed).toBe(true);
}

async function admitted(limiter: Limiter, key: string, tries: number): Promise<number> {
  let n = 0;
  for (let i = 0; i < tries; i++) if ((await limiter.check(key)).allowed) n++;
  return n;
}

/**
 * One process's limiter with 8 of 10 used on key `k`, then a loss (the store wiped, ledger and all) seen
 * at a reconnect while the store rejects every charge (`failing`), answers each 5 s late (`slow`), or
 * fails the ledger's raises before they run (`unsent`) or after (`unanswered`).
 */
async function eightUsedThenLost(fault: 'failing' | 'slow' | 'unsent' | 'unanswered', policies?: PolicyOptions) {
  vi.useFakeTimers({ toFake: FAKE, now: 1_020_000 });
  const shared = new Shared();
  const store = new ProcessStore(shared);
  const limiter = limiterOn(store, policies);
  await settle();
  await use(limiter, 'k', 8);
  shared.wipe();
  if (fault === 'failing') store.failing = true;
  else if (fault === 'slow') store.slowMs = 5_000;
  else store.ledgerFails = fault;
  store.reconnect();
  await settle();
  return { shared, store, limiter };
}

/**
 * Two processes of one limiter: A with 8 used on `k`, B with 9 (1 more); a loss, seen by A at a reconnect
 * with `fault` on its store, then by B, with none.
 */
async function twoProcessesLost(fault: (a: ProcessStore) => void) {
  vi.useFakeTimers({ toFake: FAKE, now: 1_020_000 });
  const shared = new Shared();
  const [a, b] = [new ProcessStore(shared), new ProcessStore(shared)];
  const [la, lb] = [limiterOn(a), limiterOn(b)];
  await settle();
  await use(la, 'k', 8);
  await use(lb, 'k', 1);
  shared.wipe();
  fault(a);
  a.reconnect();
  await settle();
  b.reconnect();
  await settle();
  return { a, la, lb };
}

describe('restore charges that fail are sent until they land', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a charge rejected after the loss is sent again: a key with 8 of 10 used admits 2, not 10 (its ledger said it was charged)', async () => {
    const { store, limiter } = await eightUsedThenLost('failing');
    // Still failing at the first turn (200 ms), back before the second (400 ms after it).
    await vi.advanceTimersByTimeAsync(250);
    store.failing = false;
    await vi.advanceTimersByTimeAsync(500);
    expect((await limiter.peek('k')).remaining).toBe(2);
    expect(await admitted(limiter, 'k', 5)).toBe(2);
    await limiter.close();
  });

  it('in two processes: the one whose charge failed sends it again, and the other, owing nothing by the ledger, admits what is left', async () => {
    const { a, la, lb } = await twoProcessesLost((a) => {
      a.failing = true;
    });
    a.failing = false;
    await vi.advanceTimersByTimeAsync(300);
    // B saw 9 used and A 8: the ledger held A's 8 (A's charge, failed, sent again), B charged 1 more.
    expect((await lb.peek('k')).remaining).toBe(1);
    expect(await admitted(lb, 'k', 5)).toBe(1);
    await Promise.all([la.close(), lb.close()]);
  });

  it('a slow reply, past the watchdog, is the charge landing: it is not sent twice (8 used, 2 admitted, not 0)', async () => {
    const { store, limiter } = await eightUsedThenLost('slow');
    await vi.advanceTimersByTimeAsync(12_000);
    store.slowMs = 0;
    await vi.advanceTimersByTimeAsync(12_000);
    expect((await limiter.peek('k')).remaining).toBe(2);
    await limiter.close();
  });

  it("a bucket's charge sent again owes less, as the bucket refilled since: 8 used, sent again 3 s later, charges 5", async () => {
    // 10 tokens, one back each second: 8 used are back in 8 s.
    const { store, limiter } = await eightUsedThenLost('failing', { algorithm: 'token-bucket', limit: 10, windowMs: 10_000 });
    // Tries at 0.2, 0.6, 1.4 and 3.0 s: back just before the last.
    await vi.advanceTimersByTimeAsync(2_900);
    store.failing = false;
    await vi.advanceTimersByTimeAsync(150);
    const left = (await limiter.peek('k')).remaining;
    // 5 used at 3.0 s (8 less 3 refilled), 0.05 refilled by the peek at 3.05 s; 8 charged again would leave 2.
    expect(left).toBeCloseTo(5.05, 5);
    await limiter.close();
  });

  it('a second loss drops what waits: the restore after it charges the key once (2 admitted, not 0)', async () => {
    const { shared, store, limiter } = await eightUsedThenLost('failing');
    await vi.advanceTimersByTimeAsync(700);
    // Lost again, ledger and all; this time the charge goes through, and the one waiting must not follow it.
    shared.wipe();
    store.failing = false;
    store.reconnect();
    await vi.advanceTimersByTimeAsync(30_000);
    expect((await limiter.peek('k')).remaining).toBe(2);
    await limiter.close();
  });

  it('nothing is sent again once the key would have reset', async () => {
    const { store, limiter } = await eightUsedThenLost('failing', { algorithm: 'fixed-window', limit: 10, windowMs: 2_000 });
    await vi.advanceTimersByTimeAsync(3_000);
    const sent = vi.fn(store.apply.bind(store));
    store.apply = sent;
    await vi.advanceTimersByTimeAsync(60_000);
    expect(sent).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
    await limiter.close();
  });

  for (const fault of ['unsent', 'unanswered'] as const) {
    it(`a ledger raise that failed ${fault === 'unsent' ? 'before it ran' : 'after it ran (its reply lost)'} is asked again, then charged: 2 admitted, not 10`, async () => {
      const { store, limiter } = await eightUsedThenLost(fault);
      await vi.advanceTimersByTimeAsync(250);
      store.ledgerFails = undefined;
      await vi.advanceTimersByTimeAsync(500);
      expect((await limiter.peek('k')).remaining).toBe(2);
      await limiter.close();
    });
  }

  it("in two processes, a raise whose reply was lost is asked again under its id: it owes what it owed before the other's raise, not nothing (1 admitted, not 9)", async () => {
    // A raises the ledger to 8 and loses the reply; B raises it to 9 and charges 1.
    const { a, la, lb } = await twoProcessesLost((a) => {
      a.ledgerFails = 'unanswered';
    });
    a.ledgerFails = undefined;
    await vi.advanceTimersByTimeAsync(300);
    expect((await lb.peek('k')).remaining).toBe(1);
    await Promise.all([la.close(), lb.close()]);
  });
});
