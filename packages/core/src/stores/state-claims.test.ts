import { describe, expect, it, vi } from 'vitest';
import { createLimiter } from '../limiter/create-limiter.js';
import { MemoryStore } from './memory-store.js';

/** A store that reaches the keyspace `token` names (Store.spaceToken), as two clients of one Redis under two addresses do. */
class TokenStore extends MemoryStore {
  /** Each its own state space, as two RedisStore objects whose clients' options cannot be compared; one prefix. */
  readonly stateSpace = { holder: {}, name: 'tollgate', prefix: 'tollgate' };

  /** undefined: cannot be read (now). */
  constructor(public token: string | undefined) {
    super({ sweepIntervalMs: 0 });
  }

  /** How often the token was asked for. */
  asked = 0;

  spaceToken(): Promise<string | undefined> {
    this.asked += 1;
    return Promise.resolve(this.token);
  }
}

function logged() {
  const seen: Record<string, unknown>[] = [];
  return { seen, logger: { warn() {}, error: (o: Record<string, unknown>, message: string) => seen.push({ ...o, message }) } };
}

const policies = { algorithm: 'fixed-window', limit: 5, windowMs: 60_000 } as const;
const settle = () => new Promise((r) => setTimeout(r, 0));

describe('limiters checked again once their stores say which keyspace they reach (Store.spaceToken)', () => {
  it('the second limiter without a name under the same token, through another store, logs ERR_RL_SHARED_STATE once', async () => {
    const [a, b] = [logged(), logged()];
    const first = createLimiter({
      policies: [policies, { ...policies, name: 'hour', windowMs: 3_600_000 }],
      store: new TokenStore('t1'),
      logger: a.logger,
    });
    const second = createLimiter({
      policies: [policies, { ...policies, name: 'hour', windowMs: 3_600_000 }],
      store: new TokenStore('t1'),
      logger: b.logger,
    });
    await settle();
    expect(a.seen).toEqual([]);
    expect(b.seen).toEqual([expect.objectContaining({ code: 'ERR_RL_SHARED_STATE', store: 'memory' })]);
    expect(b.seen[0]?.message).toMatch(/^ERR_RL_SHARED_STATE: 'name' is missing, .*policy 'default', fixed-window, 60000 ms/);
    await Promise.all([first.close(), second.close()]);
  });

  it('reads no token where no other store under the same prefix holds the same key names (one store per prefix: nothing sent)', async () => {
    const seen = logged();
    const stores = [new TokenStore('t4'), new TokenStore('t4'), new TokenStore('t4')];
    Object.assign(stores[1] as TokenStore, { stateSpace: { holder: {}, name: 'other', prefix: 'other' } });
    const limiters = [
      createLimiter({ policies, store: stores[0] as TokenStore, logger: seen.logger }),
      createLimiter({ policies, store: stores[1] as TokenStore, logger: seen.logger }),
      createLimiter({ policies: { ...policies, windowMs: 30_000 }, store: stores[2] as TokenStore, logger: seen.logger }),
    ];
    await settle();
    expect(stores.map((s) => s.asked)).toEqual([0, 0, 0]);
    expect(seen.seen).toEqual([]);
    await Promise.all(limiters.map((l) => l.close()));
  });

  it('another token, a name, a store that cannot say, or a closed first limiter: nothing is logged', async () => {
    const seen = logged();
    const first = createLimiter({ policies, store: new TokenStore('t2'), logger: seen.logger });
    const others = [
      createLimiter({ policies, store: new TokenStore('t3'), logger: seen.logger }),
      createLimiter({ name: 'login', policies, store: new TokenStore('t2'), logger: seen.logger }),
      createLimiter({ policies, store: new TokenStore(undefined), logger: seen.logger }),
    ];
    await settle();
    await first.close();
    const replacement = createLimiter({ policies, store: new TokenStore('t2'), logger: seen.logger });
    await settle();
    expect(seen.seen).toEqual([]);
    await Promise.all([...others, replacement].map((l) => l.close()));
  });

  it('a token that cannot be read yet (a client not ready when the limiters are made) is asked again, 200 ms later and then twice as long, until both can be compared', async () => {
    vi.useFakeTimers();
    try {
      const seen = logged();
      const late = new TokenStore(undefined);
      const first = createLimiter({ policies, store: new TokenStore('t5'), logger: seen.logger });
      const second = createLimiter({ policies, store: late, logger: seen.logger });
      await vi.advanceTimersByTimeAsync(0);
      expect(late.asked).toBe(1);
      await vi.advanceTimersByTimeAsync(200);
      expect(late.asked).toBe(2);
      late.token = 't5';
      await vi.advanceTimersByTimeAsync(399);
      expect(seen.seen).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect(late.asked).toBe(3);
      expect(seen.seen).toEqual([expect.objectContaining({ code: 'ERR_RL_SHARED_STATE' })]);
      // Compared: never asked again.
      await vi.advanceTimersByTimeAsync(60_000);
      expect(late.asked).toBe(3);
      await Promise.all([first.close(), second.close()]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('stops asking after about 12 s, or once the limiter is closed', async () => {
    vi.useFakeTimers();
    try {
      const seen = logged();
      const [never, closed] = [new TokenStore(undefined), new TokenStore(undefined)];
      const first = createLimiter({ policies, store: new TokenStore('t6'), logger: seen.logger });
      const second = createLimiter({ policies, store: never, logger: seen.logger });
      await vi.advanceTimersByTimeAsync(60_000);
      expect(never.asked).toBe(6);
      const third = createLimiter({ policies: { ...policies, windowMs: 10_000 }, store: new TokenStore('t7'), logger: seen.logger });
      const fourth = createLimiter({ policies: { ...policies, windowMs: 10_000 }, store: closed, logger: seen.logger });
      await vi.advanceTimersByTimeAsync(0);
      await fourth.close();
      await vi.advanceTimersByTimeAsync(60_000);
      expect(closed.asked).toBe(1);
      expect(seen.seen).toEqual([]);
      await Promise.all([first.close(), second.close(), third.close()]);
    } finally {
      vi.useRealTimers();
    }
  });
});
