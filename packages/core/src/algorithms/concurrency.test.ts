import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MILLI } from '../internal/fixed-point.js';
import { compilePolicy } from '../policy.js';
import { concurrency, MAX_LEASE_RETRY_MS, releaseLease, renewLease } from './concurrency.js';
import { createOutcome, type StateTable } from './kernel.js';

function table(): StateTable {
  const t: StateTable = { f: new Float64Array(2), stride: 1, logs: [] };
  concurrency.init(t, 1);
  return t;
}

function policy(limit: number, leaseMs: number) {
  return compilePolicy({ name: 'exports', algorithm: 'concurrency', limit, leaseMs }, 'policies[0]', false);
}

/** Takes lease `id` at `now` when the kernel admits; returns whether it did. */
function acquire(t: StateTable, now: number, p: ReturnType<typeof policy>, id: number): boolean {
  const out = createOutcome();
  t.lease = id;
  concurrency.consume(t, 1, now, MILLI, p, out);
  return out.allowed;
}

describe('concurrency kernel', () => {
  it('admits up to limit live leases, and again once one is released (exactly once)', () => {
    const t = table();
    const p = policy(2, 100);
    expect([acquire(t, 0, p, 1), acquire(t, 0, p, 2), acquire(t, 0, p, 3)]).toEqual([true, true, false]);
    expect(releaseLease(t, 1, 1, 0)).toBe(true);
    expect(releaseLease(t, 1, 1, 0)).toBe(false);
    expect(acquire(t, 0, p, 4)).toBe(true);
  });

  it('takes one lease whatever the cost', () => {
    const t = table();
    const out = createOutcome();
    t.lease = 1;
    concurrency.consume(t, 1, 0, 7 * MILLI, policy(1, 100), out);
    expect(out).toMatchObject({ allowed: true, exceeds: false, remaining: 0 });
  });

  it('expires a lease at its deadline: an expired holder’s late release frees nothing', () => {
    const t = table();
    const p = policy(1, 100);
    acquire(t, 0, p, 1);
    expect(acquire(t, 99, p, 2)).toBe(false);
    expect(acquire(t, 100, p, 2)).toBe(true);
    expect(releaseLease(t, 1, 1, 100)).toBe(false);
    expect(acquire(t, 100, p, 3)).toBe(false);
    expect(concurrency.expiresAt(t, 1, p)).toBe(200);
  });

  it('renews a live lease; a late one takes its slot again only when it fits', () => {
    const t = table();
    const p = policy(1, 100);
    acquire(t, 0, p, 1);
    expect(renewLease(t, 1, 1, 90, p)).toBe(true);
    expect(acquire(t, 150, p, 2)).toBe(false);
    // Late (its deadline, 190, passed: the process stalled) and the slot still free: taken again, to 300.
    expect(renewLease(t, 1, 1, 200, p)).toBe(true);
    expect(concurrency.expiresAt(t, 1, p)).toBe(300);
    expect(acquire(t, 299, p, 2)).toBe(false);
    // Late again, and another request took the slot meanwhile: refused, the lease has ended.
    expect(acquire(t, 300, p, 2)).toBe(true);
    expect(renewLease(t, 1, 1, 310, p)).toBe(false);
    expect(acquire(t, 310, p, 3)).toBe(false);
    expect(concurrency.expiresAt(t, 1, p)).toBe(400);
  });

  it('a late renewal never runs over the limit: it takes a slot only beside fewer than limit live leases', () => {
    const t = table();
    const p = policy(2, 100);
    // A row that holds nothing (never used, or every lease expired): the renewal takes a slot there.
    expect(renewLease(t, 1, 1, 0, p)).toBe(true);
    expect(acquire(t, 10, p, 2)).toBe(true);
    expect(renewLease(t, 1, 3, 20, p)).toBe(false);
    expect(releaseLease(t, 1, 2, 30)).toBe(true);
    expect(renewLease(t, 1, 3, 40, p)).toBe(true);
    expect(acquire(t, 40, p, 4)).toBe(false);
    // Both leases renewed, not added again: still two.
    expect([renewLease(t, 1, 1, 50, p), renewLease(t, 1, 3, 50, p)]).toEqual([true, true]);
    expect(acquire(t, 50, p, 4)).toBe(false);
  });

  it('reports remaining, reset and a retry bounded by the earliest expiry and 1 s', () => {
    const t = table();
    const p = policy(2, 5_000);
    const out = createOutcome();
    t.lease = 1;
    concurrency.consume(t, 1, 0, MILLI, p, out);
    expect(out).toMatchObject({ allowed: true, remaining: MILLI, resetMs: 5_000, retryAfterMs: 0 });
    t.lease = 2;
    concurrency.consume(t, 1, 1_000, MILLI, p, out);
    concurrency.evaluate(t, 1, 1_000, MILLI, p, out);
    expect(out).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: MAX_LEASE_RETRY_MS, resetMs: 5_000 });
    concurrency.evaluate(t, 1, 4_700, MILLI, p, out);
    expect(out.retryAfterMs).toBe(300);
    // A cost that can never fit reports the state as it stands (the limiter's uncharged report).
    concurrency.evaluate(t, 1, 4_700, Number.POSITIVE_INFINITY, p, out);
    expect(out).toMatchObject({ allowed: false, remaining: 0, resetMs: 1_300 });
  });

  it('never holds more than limit live leases, and matches a reference model (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 200 }),
        fc.array(fc.tuple(fc.constantFrom('acquire', 'release', 'renew'), fc.nat(60), fc.nat(20)), { maxLength: 80 }),
        (limit, leaseMs, ops) => {
          const t = table();
          const p = policy(limit, leaseMs);
          const model = new Map<number, number>();
          let now = 0;
          let id = 0;
          for (const [op, dt, pick] of ops) {
            now += dt;
            for (const [k, d] of model) if (d <= now) model.delete(k);
            if (op === 'acquire') {
              id += 1;
              const granted = acquire(t, now, p, id);
              expect(granted).toBe(model.size < limit);
              if (granted) model.set(id, now + leaseMs);
            } else {
              const target = pick % (id + 1);
              const live = model.has(target);
              if (op === 'release') {
                expect(releaseLease(t, 1, target, now)).toBe(live);
                model.delete(target);
              } else {
                // A live lease is renewed; one that ended (late, released, never taken) takes a slot if one is free.
                const holds = live || model.size < limit;
                expect(renewLease(t, 1, target, now, p)).toBe(holds);
                if (holds) model.set(target, now + leaseMs);
              }
            }
            expect(model.size).toBeLessThanOrEqual(limit);
          }
        },
      ),
    );
  });
});
