import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { configValue } from './store-client.js';
import { toStoreClient } from './to-store-client.js';

/** Records every command a fake client is asked to send. */
function recorder(reply: unknown = 'OK') {
  const sent: unknown[][] = [];
  const send = async (...args: unknown[]) => {
    sent.push(args);
    return reply;
  };
  return { sent, send };
}

describe('toStoreClient', () => {
  it('refuses what is no client', () => {
    for (const value of [undefined, null, 'redis://localhost:6379', 42, {}, { status: 'ready' }, { sendCommand: 'no' }]) {
      expect(toStoreClient(value)).toBeUndefined();
    }
  });

  it('takes a node-redis Sentinel client (createSentinel) and sends every command to its master', async () => {
    const r = recorder(1);
    const events = new EventEmitter();
    const sentinel = Object.assign(events, {
      isOpen: true,
      isReady: true,
      sendCommand: r.send,
      getMasterNode: () => ({ host: '127.0.0.1', port: 6379 }),
      getSentinelNode: () => ({ host: '127.0.0.1', port: 26379 }),
    });
    const c = toStoreClient(sentinel);
    expect(c?.library).toBe('node-redis');
    expect(c?.status).toBe('ready');
    await c?.evalsha('abc', 1, ['k', '1']);
    await c?.scriptHost('k')?.load('return 1');
    // isReadonly false: never a replica.
    expect(r.sent).toEqual([
      [false, ['EVALSHA', 'abc', '1', 'k', '1']],
      [false, ['SCRIPT', 'LOAD', 'return 1']],
    ]);
    // A failover (its topology changes) and a reconnect reach the lease keeper.
    const seen: string[] = [];
    const stop = c?.watch?.((e) => seen.push(e));
    events.emit('topology-change', { type: 'MASTER_CHANGE' });
    events.emit('end');
    events.emit('ready');
    stop?.();
    events.emit('ready');
    expect(seen).toEqual(['ready', 'lost', 'ready']);
    sentinel.isReady = false;
    expect(c?.status).toBe('reconnecting');
  });

  it('takes an ioredis-shaped client as ioredis, its options read for the checks', () => {
    const r = recorder();
    const c = toStoreClient({
      status: 'ready',
      options: { stringNumbers: true },
      evalsha: r.send,
      eval: r.send,
      script: r.send,
      del: r.send,
    });
    expect(c?.library).toBe('ioredis');
    expect(c?.isCluster).toBe(false);
    expect(c?.settings).toEqual({ stringNumbers: true, resendsAfterReconnect: true, sentinelWithoutFailoverDetector: false });
    const sentinel = (options: object) =>
      toStoreClient({ status: 'wait', options, evalsha: r.send, eval: r.send, script: r.send, del: r.send })?.settings
        .sentinelWithoutFailoverDetector;
    expect(sentinel({ sentinels: [{ host: '127.0.0.1', port: 26379 }], name: 'mymaster' })).toBe(true);
    expect(sentinel({ sentinels: [{ host: '127.0.0.1', port: 26379 }], name: 'mymaster', failoverDetector: true })).toBe(false);
    expect(sentinel({ sentinels: null })).toBe(false);
  });

  it('writes a busy EVALSHA at once and corks the ioredis socket for the rest of the tick; a lone one corks nothing', async () => {
    const r = recorder();
    const log: string[] = [];
    const stream = { cork: () => log.push('cork'), uncork: () => log.push('uncork') };
    const fake = {
      status: 'ready',
      stream,
      evalsha: (...args: unknown[]) => {
        log.push('evalsha');
        return r.send(...args);
      },
      eval: r.send,
      script: r.send,
      del: r.send,
    };
    const c = toStoreClient(fake);
    const endOfTick = () => new Promise((resolve) => setImmediate(resolve));
    await Promise.all([c?.evalsha('abc', 1, ['k1'], true), c?.evalsha('abc', 1, ['k2'], true), c?.evalsha('abc', 1, ['k3'], true)]);
    expect(log).toEqual(['evalsha', 'cork', 'evalsha', 'evalsha']);
    await endOfTick();
    expect(log).toEqual(['evalsha', 'cork', 'evalsha', 'evalsha', 'uncork']);
    await c?.evalsha('abc', 1, ['k4'], true);
    await endOfTick();
    expect(log.slice(5)).toEqual(['evalsha', 'cork', 'uncork']);
    await c?.evalsha('abc', 1, ['k5'], false);
    await endOfTick();
    expect(log.slice(8)).toEqual(['evalsha']);
    expect(r.sent).toEqual([
      ['abc', 1, 'k1'],
      ['abc', 1, 'k2'],
      ['abc', 1, 'k3'],
      ['abc', 1, 'k4'],
      ['abc', 1, 'k5'],
    ]);
  });

  it('sends EVALSHA through a node-redis client as one argument array, and maps isOpen/isReady to a status', async () => {
    const r = recorder([1]);
    const fake = { isOpen: true, isReady: false, sendCommand: (args: string[]) => r.send(args) };
    const c = toStoreClient(fake);
    expect(c?.library).toBe('node-redis');
    expect(c?.status).toBe('reconnecting');
    fake.isReady = true;
    expect(c?.status).toBe('ready');
    fake.isOpen = false;
    fake.isReady = false;
    expect(c?.status).toBe('wait');
    await c?.evalsha('abc', 1, ['k', '', '1000']);
    await c?.del(['a', 'b']);
    expect(r.sent).toEqual([[['EVALSHA', 'abc', '1', 'k', '', '1000']], [['DEL', 'a', 'b']]]);
    expect(c?.settings).toEqual({ stringNumbers: false, resendsAfterReconnect: false, sentinelWithoutFailoverDetector: false });
  });

  it('routes a node-redis cluster by the first key, and loads scripts on the slot master of the key', async () => {
    const routed = recorder([1]);
    const node = recorder('sha');
    const master = { host: '10.0.0.2', port: 7001 };
    const fake = {
      isOpen: true,
      isReady: true,
      masters: [master],
      getSlotMaster: () => master,
      nodeClient: async (n: unknown) => (n === master ? { sendCommand: (args: string[]) => node.send(args) } : undefined),
      sendCommand: (firstKey: string | undefined, readonly: boolean | undefined, args: string[]) => routed.send(firstKey, readonly, args),
    };
    const c = toStoreClient(fake);
    expect(c?.isCluster).toBe(true);
    await c?.evalsha('abc', 1, ['t:{u}:p', '', '1000']);
    expect(routed.sent).toEqual([['t:{u}:p', false, ['EVALSHA', 'abc', '1', 't:{u}:p', '', '1000']]]);
    const host = c?.scriptHost('t:{u}:p');
    expect(host?.id).toBe('10.0.0.2:7001');
    await host?.load('return 1');
    expect(node.sent).toEqual([[['SCRIPT', 'LOAD', 'return 1']]]);
    expect(c?.nodeAddress('t:{u}:p')).toBe('10.0.0.2:7001');
  });

  it('takes any other object with sendCommand as the generic client, always ready', async () => {
    const r = recorder(['maxmemory-policy', 'allkeys-lru']);
    const c = toStoreClient({ sendCommand: (args: string[]) => r.send(args) });
    expect(c?.library).toBe('sendCommand');
    expect(c?.status).toBe('ready');
    expect(await c?.configGet('maxmemory-policy')).toEqual(['allkeys-lru']);
  });
});

describe('configValue', () => {
  it('reads RESP2 pairs, RESP3 maps and objects, and Buffers', () => {
    expect(configValue(['maxmemory-policy', 'noeviction'], 'maxmemory-policy')).toBe('noeviction');
    expect(configValue(new Map([['maxmemory-policy', 'allkeys-lru']]), 'maxmemory-policy')).toBe('allkeys-lru');
    expect(configValue({ 'maxmemory-policy': 'volatile-ttl' }, 'maxmemory-policy')).toBe('volatile-ttl');
    expect(configValue([Buffer.from('maxmemory-policy'), Buffer.from('noeviction')], 'maxmemory-policy')).toBe('noeviction');
    expect(configValue([], 'maxmemory-policy')).toBeUndefined();
    expect(configValue(null, 'maxmemory-policy')).toBeUndefined();
  });
});
