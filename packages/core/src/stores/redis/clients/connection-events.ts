/**
 * @module When the client's connection to Redis closes and when it is ready again, for the lease
 * keeper (leases/lease-keeper.ts): a restart or a failover loses the leases the server held, so after a
 * reconnect the limiter puts back those its requests still hold before it grants new ones. Read from
 * the client's own events, by name, so no Redis library is imported: ioredis and iovalkey emit
 * `'close'` and `'ready'` (also in Sentinel mode, where `'ready'` follows the switch to a new master);
 * node-redis emits `'error'` or `'end'` when the socket goes and `'ready'` after every reconnect (its
 * Sentinel client also `'topology-change'` when it follows a failover).
 * Absent on a Cluster and on a bare `sendCommand` client: there the keeper learns of a loss when a
 * renewal finds a lease gone.
 */
import type { ConnectionEvent } from '../../store.js';
import type { StoreClient } from './store-client.js';

interface Emitter {
  on(event: string, listener: () => void): unknown;
}

function isEmitter(value: unknown): value is Emitter {
  return typeof (value as { on?: unknown }).on === 'function';
}

/** The events of `raw` that say its connection closed, by library; undefined where none can be trusted. */
function lostEvents(raw: unknown, client: StoreClient): readonly string[] | undefined {
  if (client.isCluster || !isEmitter(raw)) return undefined;
  if (client.library === 'ioredis') return ['close'];
  if (client.library === 'node-redis') return ['error', 'end'];
  return undefined;
}

/**
 * The events of `raw` that say it is ready to send (again): `'ready'`, and for a node-redis Sentinel
 * client also `'topology-change'` (it moved to a new master without closing its own state).
 */
function readyEvents(raw: unknown): readonly string[] {
  return typeof (raw as { getMasterNode?: unknown }).getMasterNode === 'function' ? ['ready', 'topology-change'] : ['ready'];
}

/**
 * Listeners by client: one pair of listeners on the client however many limiters and stores watch it,
 * so an app with many limiters on one client never trips Node's MaxListenersExceededWarning.
 */
const watchers = new WeakMap<Emitter, Set<(event: ConnectionEvent) => void>>();

function listenersOf(emitter: Emitter, lost: readonly string[], ready: readonly string[]): Set<(event: ConnectionEvent) => void> {
  let set = watchers.get(emitter);
  if (set === undefined) {
    const all = new Set<(event: ConnectionEvent) => void>();
    const tell = (event: ConnectionEvent): void => {
      for (const l of [...all]) l(event);
    };
    for (const e of lost) emitter.on(e, () => tell('lost'));
    for (const e of ready) emitter.on(e, () => tell('ready'));
    watchers.set(emitter, all);
    set = all;
  }
  return set;
}

/** `StoreClient.watch` for `raw` (the app's client, `client` its StoreClient), or undefined. */
export function connectionWatch(raw: unknown, client: StoreClient): StoreClient['watch'] {
  const lost = lostEvents(raw, client);
  if (lost === undefined) return undefined;
  const emitter = raw as Emitter;
  const ready = readyEvents(raw);
  return (listener: (event: ConnectionEvent) => void) => {
    const set = listenersOf(emitter, lost, ready);
    set.add(listener);
    return () => {
      set.delete(listener);
    };
  };
}
