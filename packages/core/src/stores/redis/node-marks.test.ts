import { describe, expect, it } from 'vitest';
import type { StoreClient } from './clients/store-client.js';
import { keySlot } from './cluster-slot.js';
import { MarkTokens, NodeMarks } from './node-marks.js';

/** A Cluster client of three masters splitting the slots (`a` 0-99, `b` 100-16382, `c` the last slot alone), over a Set. */
function fakeCluster(status = 'ready') {
  // Each mark's token, as MARK_ALIVE keeps it: set only where missing, returned either way.
  const keys = new Map<string, string>();
  const sent: string[] = [];
  const owner = (slot: number) => (slot < 100 ? 'a:1' : slot < 16383 ? 'b:2' : 'c:3');
  const client = {
    status,
    nodeAddress: (key: string) => owner(keySlot(key)),
    masterAddresses: () => ['a:1', 'b:2', 'c:3'],
    evalScript(_lua: string, _n: number, [name, token]: readonly string[]) {
      sent.push(name as string);
      if (!keys.has(name as string)) keys.set(name as string, token as string);
      return Promise.resolve(keys.get(name as string));
    },
  };
  return { client, keys, sent, owner };
}

const asClient = (c: object) => c as unknown as StoreClient;

describe('NodeMarks', () => {
  it("puts each master's mark in a slot that master serves, the same key in every process, even for a master of one slot", async () => {
    const { client, keys, owner } = fakeCluster();
    const marks = new NodeMarks(asClient(client), 'tg');
    marks.markAll('api');
    await new Promise((r) => setImmediate(r));
    expect([...keys.keys()].map((k) => owner(keySlot(k))).sort()).toEqual(['a:1', 'b:2', 'c:3']);
    const again = fakeCluster();
    const other = new NodeMarks(asClient(again.client), 'tg');
    other.markAll('api');
    await new Promise((r) => setImmediate(r));
    expect([...again.keys.keys()].sort()).toEqual([...keys.keys()].sort());
    expect([...keys.keys()].every((k) => k.startsWith('tg:v2:api:~alive{'))).toBe(true);
  });

  it('tells a loss only of a mark it saw: never set by it is no loss; set, then gone, is', async () => {
    const { client, keys } = fakeCluster();
    const marks = new NodeMarks(asClient(client), 'tg');
    // b's mark was never set by this store: setting it now tells nothing.
    expect(await marks.mark(undefined, 'b:2')).toBe(false);
    expect(await marks.mark(undefined, 'b:2')).toBe(false);
    keys.clear();
    expect(await marks.mark(undefined, 'b:2')).toBe(true);
    expect(await marks.mark(undefined, 'b:2')).toBe(false);
    // Another process set it before this store asked: seen, so its later loss is told.
    const bOnly = [...keys.keys()][0] as string;
    const fresh = new NodeMarks(asClient(client), 'tg');
    expect(await fresh.mark(undefined, 'b:2')).toBe(false);
    keys.delete(bOnly);
    expect(await fresh.mark(undefined, 'b:2')).toBe(true);
    // The first store finds the mark there, set again by the other after the loss: a new token, so a loss.
    expect(await marks.mark(undefined, 'b:2')).toBe(true);
    expect(await marks.mark(undefined, 'b:2')).toBe(false);
  });

  it("tells the other limiters of a master's loss found by one: each loss once, with the master and the limiter that found it", async () => {
    const { client, keys } = fakeCluster();
    const marks = new NodeMarks(asClient(client), 'tg');
    const told: [string, string | undefined][] = [];
    const stop = marks.watchLoss((node, limiter) => told.push([node, limiter]));
    marks.markAll('api');
    marks.markAll('login');
    await new Promise((r) => setImmediate(r));
    expect(await marks.mark('api', 'b:2')).toBe(false);
    expect(told).toEqual([]);
    keys.clear();
    expect(await marks.mark('api', 'b:2')).toBe(true);
    expect(told).toEqual([['b:2', 'api']]);
    // Found later, outside a telling, `login`'s loss on b is told too.
    expect(await marks.mark('login', 'b:2')).toBe(true);
    expect(told).toEqual([
      ['b:2', 'api'],
      ['b:2', 'login'],
    ]);
    stop();
    keys.clear();
    expect(await marks.mark('api', 'a:1')).toBe(true);
    expect(told).toHaveLength(2);
  });

  it('a mark asked for by a listener while a loss is told tells nobody again: one round of tellings per loss, however many limiters', async () => {
    const { client, keys } = fakeCluster();
    const marks = new NodeMarks(asClient(client), 'tg');
    const names = ['l0', 'l1', 'l2', 'l3'];
    for (const n of names) marks.markAll(n);
    await new Promise((r) => setImmediate(r));
    const told: string[] = [];
    const found: Promise<boolean>[] = [];
    // Each limiter, told of another's loss, asks for its own mark there (as BudgetRestore does).
    for (const n of names)
      marks.watchLoss((node, limiter) => {
        told.push(`${n} told by ${limiter}`);
        if (limiter !== n) found.push(marks.mark(n, node));
      });
    keys.clear();
    expect(await marks.mark('l0', 'b:2')).toBe(true);
    expect(await Promise.all(found)).toEqual([true, true, true]);
    expect(told).toEqual(names.map((n) => `${n} told by l0`));
  });

  it('a master the slot map does not know gets no mark, and nothing is sent', async () => {
    const { client, sent } = fakeCluster();
    const marks = new NodeMarks(asClient(client), 'tg');
    expect(await marks.mark('api', 'z:9')).toBe(false);
    const unknown = { ...client, nodeAddress: () => undefined };
    expect(await new NodeMarks(asClient(unknown), 'tg').mark('api', 'a:1')).toBe(false);
    expect(sent).toEqual([]);
  });

  it('before the Cluster is ready, marks wait for the first call that finds it ready (flush)', async () => {
    const { client, keys } = fakeCluster('connecting');
    const marks = new NodeMarks(asClient(client), 'tg');
    marks.markAll('api');
    marks.markAll('login');
    expect(marks.waiting).toBe(true);
    expect(keys.size).toBe(0);
    client.status = 'ready';
    marks.flush();
    expect(marks.waiting).toBe(false);
    await new Promise((r) => setImmediate(r));
    expect(keys.size).toBe(6);
  });

  it('a mark that did not go in (a failed command, no master or slot known yet) is tried again at a call past a wait that doubles, not at every call', async () => {
    const { client, keys } = fakeCluster();
    let t = 1_000;
    let failing = true;
    const evalScript = client.evalScript.bind(client);
    const flaky = {
      ...client,
      evalScript: (lua: string, n: number, args: readonly string[]) =>
        failing && args[0]?.endsWith('{0}') === false ? Promise.reject(new Error('TRYAGAIN')) : evalScript(lua, n, args),
    };
    const marks = new NodeMarks(asClient(flaky), 'tg', () => t);
    marks.markAll('api');
    await new Promise((r) => setImmediate(r));
    expect(keys.size).toBe(1);
    // Not at the next call: after 200 ms, then 400 ms, ... (up to 10 s).
    expect(marks.waiting).toBe(false);
    t += 199;
    expect(marks.waiting).toBe(false);
    t += 1;
    expect(marks.waiting).toBe(true);
    failing = false;
    marks.flush();
    await new Promise((r) => setImmediate(r));
    expect(keys.size).toBe(3);
    expect(marks.waiting).toBe(false);
    t += 60_000;
    expect(marks.waiting).toBe(false);

    // A client ready before it lists its masters, then before its slot map holds a slot.
    let masters: string[] = [];
    let slots = false;
    const early = fakeCluster();
    const empty = {
      ...early.client,
      masterAddresses: () => masters,
      nodeAddress: (k: string) => (slots ? early.client.nodeAddress(k) : undefined),
    };
    const later = new NodeMarks(asClient(empty), 'tg', () => t);
    later.markAll('api');
    t += 200;
    expect(later.waiting).toBe(true);
    masters = ['a:1', 'b:2', 'c:3'];
    later.flush();
    expect(later.waiting).toBe(false);
    t += 399;
    expect(later.waiting).toBe(false);
    t += 1;
    slots = true;
    later.flush();
    await new Promise((r) => setImmediate(r));
    expect(early.keys.size).toBe(3);
    expect(later.waiting).toBe(false);
  });

  it('a client that cannot list its masters is never asked for marks', () => {
    const { client, sent } = fakeCluster();
    const marks = new NodeMarks(asClient({ ...client, masterAddresses: undefined }), 'tg');
    marks.markAll('api');
    expect(marks.waiting).toBe(false);
    expect(sent).toEqual([]);
  });

  it("a mark's first ask that failed is asked again at a call past the wait, so its later loss is told; a later ask that fails needs nothing", async () => {
    const { client, keys } = fakeCluster();
    let t = 0;
    let failing = true;
    const evalScript = client.evalScript.bind(client);
    const flaky = asClient({
      ...client,
      evalScript: (lua: string, n: number, args: readonly string[]) =>
        failing ? Promise.reject(new Error('LOADING')) : evalScript(lua, n, args),
    });
    const tokens = new MarkTokens(flaky, () => t);
    await expect(tokens.ask('tg:v2:~alive')).rejects.toThrow('LOADING');
    expect(tokens.waiting).toBe(false);
    t += 200;
    expect(tokens.waiting).toBe(true);
    failing = false;
    tokens.flush();
    expect(tokens.waiting).toBe(false);
    await new Promise((r) => setImmediate(r));
    // Found now: the mark gone since is a loss.
    keys.clear();
    expect(await tokens.ask('tg:v2:~alive')).toBe(true);
    // An ask that fails once the token is known: nothing to ask again; the next ask compares with what was found.
    failing = true;
    await expect(tokens.ask('tg:v2:~alive')).rejects.toThrow('LOADING');
    t += 60_000;
    expect(tokens.waiting).toBe(false);
    failing = false;
    keys.clear();
    expect(await tokens.ask('tg:v2:~alive')).toBe(true);
  });
});
