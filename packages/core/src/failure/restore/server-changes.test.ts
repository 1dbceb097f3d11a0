import { describe, expect, it, vi } from 'vitest';
import { MemoryStore } from '../../stores/memory-store.js';
import type { Store } from '../../stores/store.js';
import { ServerChanges } from './server-changes.js';

/** A store whose servers (node -> run_id) the test sets, or makes the reading fail (`undefined`). */
function storeOf(servers: () => Record<string, string> | undefined): Store {
  const store = new MemoryStore({ sweepIntervalMs: 0 }) as Store & { servers?: Store['servers'] };
  store.servers = () => {
    const s = servers();
    return s === undefined ? Promise.reject(new Error('INFO refused')) : Promise.resolve(new Map(Object.entries(s)));
  };
  return store;
}

describe('ServerChanges', () => {
  it('is undefined for a store that cannot say which server answers', () => {
    expect(ServerChanges.of(new MemoryStore({ sweepIntervalMs: 0 }))).toBeUndefined();
  });

  it('notes a node whose server changed at the reading that found it, and a node new since the first reading; the first reading and a failed one change nothing', async () => {
    let now: Record<string, string> | undefined = { a: 'r1', b: 'r2' };
    const changes = ServerChanges.of(storeOf(() => now)) as ServerChanges;
    await changes.read(10);
    expect([changes.changedAt('a'), changes.changedAt('b')]).toEqual([Number.NEGATIVE_INFINITY, Number.NEGATIVE_INFINITY]);
    now = undefined;
    await changes.read(20);
    expect(changes.changedAt('a')).toBe(Number.NEGATIVE_INFINITY);
    // a restarted (a new run_id), c promoted: both changed at 30; b, the same server, did not.
    now = { a: 'r3', b: 'r2', c: 'r4' };
    await changes.read(30);
    expect([changes.changedAt('a'), changes.changedAt('b'), changes.changedAt('c')]).toEqual([30, Number.NEGATIVE_INFINITY, 30]);
    // A call over several nodes: the latest change of any of them.
    expect(changes.changedAt('b+c')).toBe(30);
    await changes.read(40);
    expect(changes.changedAt('a')).toBe(30);
  });

  it('says which reading is in flight, so an answer can wait for it', async () => {
    const changes = ServerChanges.of(storeOf(() => ({ a: 'r1' }))) as ServerChanges;
    expect(changes.readingOf('a')).toBeUndefined();
    const r = changes.read(1);
    const waiting = changes.readingOf('a');
    expect(waiting).toBeDefined();
    await r;
    await waiting;
    expect(changes.readingOf('a')).toBeUndefined();
  });

  /**
   * A store of masters a, b (and c once promoted) whose reading of one master (`servers(node)`) answers
   * on its own; a master in `dead` never answers, and holds back a reading of every master.
   */
  function masters(ids: Record<string, string>, dead: Set<string>) {
    const store = new MemoryStore({ sweepIntervalMs: 0 }) as Store & { servers?: Store['servers'] };
    const asked: (string | undefined)[] = [];
    store.servers = (node?: string) => {
      asked.push(node);
      const nodes = node === undefined ? Object.keys(ids) : [node];
      if (nodes.some((n) => dead.has(n))) return new Promise(() => {});
      return Promise.resolve(new Map(nodes.filter((n) => ids[n] !== undefined).map((n) => [n, ids[n] as string])));
    };
    return { changes: ServerChanges.of(store) as ServerChanges, asked };
  }

  it('reads one master on its own once the readings know several, and an answer from a master that answers never waits for one that does not', async () => {
    const ids: Record<string, string> = { a: 'r1', b: 'r2' };
    const dead = new Set<string>();
    const { changes, asked } = masters(ids, dead);
    // Before any reading found servers, a reading of one master reads them all.
    await changes.read(10, 'a');
    expect(asked).toEqual([undefined]);
    // b dies and a restarts: a reading of every master reads each on its own too, and a's own tells of
    // its change while b's and the whole one stay out.
    dead.add('b');
    ids.a = 'r3';
    void changes.read(20);
    expect(asked.slice(1)).toEqual([undefined, 'a', 'b']);
    await changes.readingOf('a');
    expect(changes.changedAt('a')).toBe(20);
    expect(changes.readingOf('b')).toBeDefined();
    expect(changes.readingOf('a+b')).toBeDefined();
    // A reading of a alone (its breaker closed) holds nothing of b's.
    ids.a = 'r4';
    await changes.read(30, 'a');
    expect(asked.slice(4)).toEqual(['a']);
    expect(changes.changedAt('a')).toBe(30);
    // c, promoted, is no master the readings know: its answers wait for a reading of every master, until
    // a reading of c alone (its breaker closed) tells of it; then they never wait for b's.
    expect(changes.readingOf('c')).toBeDefined();
    ids.c = 'r5';
    await changes.read(40, 'c');
    expect(changes.changedAt('c')).toBe(40);
    expect(changes.readingOf('c')).toBeUndefined();
  });

  it('a master whose own reading failed waits for the reading of every master, which may still tell of it', async () => {
    const ids: Record<string, string> = { a: 'r1', b: 'r2' };
    let refuse = false;
    let release: (() => void) | undefined;
    const store = new MemoryStore({ sweepIntervalMs: 0 }) as Store & { servers?: Store['servers'] };
    store.servers = (node?: string) => {
      const snap = new Map(Object.entries(ids).filter(([n]) => node === undefined || n === node));
      if (node !== undefined) return refuse ? Promise.reject(new Error('INFO refused')) : Promise.resolve(snap);
      return release === undefined && ids.a !== 'r1' ? new Promise((r) => (release = () => r(snap))) : Promise.resolve(snap);
    };
    const changes = ServerChanges.of(store) as ServerChanges;
    await changes.read(10);
    ids.a = 'r3';
    refuse = true;
    void changes.read(20);
    await new Promise((r) => setTimeout(r, 0));
    const waiting = changes.readingOf('a');
    expect(waiting).toBeDefined();
    release?.();
    await waiting;
    expect(changes.changedAt('a')).toBe(20);
  });

  it('a reading of every master that comes back late does not set an older server over a later reading of one', async () => {
    const ids: Record<string, string> = { a: 'r1', b: 'r2' };
    let release: (() => void) | undefined;
    const store = new MemoryStore({ sweepIntervalMs: 0 }) as Store & { servers?: Store['servers'] };
    store.servers = (node?: string) => {
      const snap = new Map(Object.entries(ids).filter(([n]) => node === undefined || n === node));
      // Every reading of all masters but the first waits for `release`, with what it read when sent.
      if (node === undefined && release === undefined && snap.size === 2 && ids.a !== 'r1')
        return new Promise((r) => (release = () => r(snap)));
      return Promise.resolve(snap);
    };
    const changes = ServerChanges.of(store) as ServerChanges;
    await changes.read(10);
    ids.a = 'r3';
    void changes.read(20);
    await changes.readingOf('a');
    expect(changes.changedAt('a')).toBe(20);
    // a restarts again, read alone at 30; then the reading of every master sent at 20 lands with r3.
    ids.a = 'r4';
    await changes.read(30, 'a');
    release?.();
    await new Promise((r) => setTimeout(r, 0));
    // Had it set r3 over r4, the next reading of a would take r4 for a change at 40.
    await changes.read(40, 'a');
    expect(changes.changedAt('a')).toBe(30);
  });

  /** The changes of a store whose servers `servers()` gives, and how many times it was read, on fake timers. */
  function counted(servers: () => Record<string, string> | undefined) {
    const count = { reads: 0 };
    const changes = ServerChanges.of(
      storeOf(() => {
        count.reads++;
        return servers();
      }),
    ) as ServerChanges;
    return { changes, count };
  }

  it('reads again, 200 ms later and then twice as long each time, until a reading finds a server: a store not ready yet when the limiter was made still sees its first change', async () => {
    vi.useFakeTimers();
    try {
      let now: Record<string, string> = {};
      const { changes, count } = counted(() => now);
      await changes.read(Number.NEGATIVE_INFINITY);
      await vi.advanceTimersByTimeAsync(199);
      expect(count.reads).toBe(1);
      await vi.advanceTimersByTimeAsync(1);
      expect(count.reads).toBe(2);
      await vi.advanceTimersByTimeAsync(400);
      expect(count.reads).toBe(3);
      // Ready: the next reading is the first that finds servers, and the last read on its own.
      now = { a: 'r1', b: 'r2' };
      await vi.advanceTimersByTimeAsync(800);
      expect(count.reads).toBe(4);
      await vi.advanceTimersByTimeAsync(60_000);
      expect(count.reads).toBe(4);
      // a restarted: its breaker closes at 50, and the reading then sees the change.
      now = { a: 'r3', b: 'r2' };
      await changes.read(50);
      expect([changes.changedAt('a'), changes.changedAt('b')]).toEqual([50, Number.NEGATIVE_INFINITY]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('stops reading again once closed', async () => {
    vi.useFakeTimers();
    try {
      const { changes, count } = counted(() => undefined);
      await changes.read(Number.NEGATIVE_INFINITY);
      changes.close();
      await vi.advanceTimersByTimeAsync(60_000);
      expect(count.reads).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });
});
