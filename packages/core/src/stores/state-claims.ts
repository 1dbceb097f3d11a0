/**
 * @module Which limiter keeps state where, per store: two limiters without a `name` whose policies have
 * the same storage identity (`CompiledPolicy.id`: role, policy name, algorithm, window) would read and
 * charge the same state on a shared store, so an unrelated 5/min limiter would spend a 100/min one's
 * budget. `checkState` refuses the second one at construction (`ERR_RL_SHARED_STATE`), the same way on
 * every store: the registry lives here, keyed by the store's state space (`Store.stateSpace`: for a
 * RedisStore the keyspace its client's options name, or the client, and its prefix, so two RedisStore
 * objects on one server, database and prefix count as one, whichever clients they were given; the
 * store itself otherwise). Limiters with a `name` carry it in every key name, so they never collide
 * with another name, and two limiters given the same name share on purpose. Claims are held weakly: a
 * limiter that is closed (`releaseState`) or dropped frees its claims, so a replacement may take them.
 *
 * Options cannot tell every pair of stores that reach the same keys (two addresses of one server, a client
 * whose options tollgate cannot read: a node-redis Cluster or Sentinel client, `{ sendCommand }`). Where two
 * state spaces under one key prefix hold unnamed claims of the same key names, and both stores can read a
 * token of their keyspace from the store itself (`Store.spaceToken`: RedisStore sets one where it is
 * missing), the tokens are compared (`confirmState`): equal, the limiter that came second is told, and logs
 * `ERR_RL_SHARED_STATE` (it is serving by then: nothing is thrown).
 */
import type { CompiledPolicy } from '../algorithms/kernel.js';
import { RateLimitConfigError } from '../errors.js';
import { DoublingWait } from '../internal/doubling-wait.js';
import type { Store } from './store.js';

/** State space holder → space name → policy id → the limiter (its owner token) holding it. */
const claims = new WeakMap<object, Map<string, Map<string, WeakRef<object>>>>();

function spaceOf(store: Store): Map<string, WeakRef<object>> {
  const holder = store.stateSpace?.holder ?? store;
  const name = store.stateSpace?.name ?? '';
  let byName = claims.get(holder);
  if (byName === undefined) {
    byName = new Map();
    claims.set(holder, byName);
  }
  let space = byName.get(name);
  if (space === undefined) {
    space = new Map();
    byName.set(name, space);
  }
  return space;
}

/** Claims checked while the options were read, taken once the limiter is built (`takeState`). */
const pending = new WeakMap<object, { readonly store: Store; readonly policies: readonly CompiledPolicy[] }>();

/**
 * Checks that `owner` (one limiter, about to be built) may keep the state of `policies` in `store`, and
 * keeps the claim for `takeState`: throws `ERR_RL_SHARED_STATE` when another live limiter without a name
 * already keeps state of the same identity there. Named policies (`limiter` set) are never checked:
 * their name is the user's word, unless an adapter made it (`nameByAdapter`: a Fastify route's limiter in
 * a plugin without a name, named after its route, which two apps in one process may both have): those
 * are checked as unnamed ones, since nobody asked them to share. Nothing is recorded yet, so a limiter
 * whose construction fails later (a plan the store refuses) leaves no claim behind.
 */
export function checkState(store: Store, policies: readonly CompiledPolicy[], owner: object, nameByAdapter = false): void {
  const unnamed = nameByAdapter ? policies : policies.filter((p) => p.limiter === undefined);
  if (unnamed.length === 0) return;
  conflicts(store, unnamed, owner);
  pending.set(owner, { store, policies: unnamed });
}

/** Told that a limiter shares key names with another through a store its options could not tell apart (`confirmState`). */
export type SharedReport = (message: string) => void;

/**
 * Records the claims `checkState` kept for `owner` (its limiter is built); checks them again, and once more
 * when the store says which keyspace it reached (`confirmState`), telling `shared` of a conflict then.
 */
export function takeState(owner: object, shared?: SharedReport): void {
  const claim = pending.get(owner);
  if (claim === undefined) return;
  pending.delete(owner);
  conflicts(claim.store, claim.policies, owner);
  const space = spaceOf(claim.store);
  for (const p of claim.policies) space.set(p.id, new WeakRef(owner));
  // Drop the claims of limiters that were garbage-collected without close().
  for (const [id, ref] of space) if (ref.deref() === undefined) space.delete(id);
  if (shared !== undefined) confirmState(claim.store, claim.policies, owner, shared);
}

/** An unnamed claim through a store that can read its keyspace token (`confirmState`). */
interface TokenClaim {
  readonly owner: WeakRef<object>;
  readonly store: WeakRef<Store>;
  /** The state space it claimed through (`spaceId`), and the prefix of its keys. */
  readonly space: string;
  readonly prefix: string;
}

/** Policy id → the unnamed claims made through stores that can read their keyspace token. */
const tokenClaims = new Map<string, TokenClaim[]>();
/** Limiters closed (`releaseState`): their claims here are free. */
const released = new WeakSet<object>();
/** A number per state-space holder, so a claim names its space without holding the holder. */
const holderIds = new WeakMap<object, number>();

let nextHolderId = 1;

function spaceId(store: Store): string {
  const holder = store.stateSpace?.holder ?? store;
  let id = holderIds.get(holder);
  if (id === undefined) {
    id = nextHolderId++;
    holderIds.set(holder, id);
  }
  return `${id} ${store.stateSpace?.name ?? ''}`;
}

/** The claim's limiter and store while the limiter is live (not closed, not collected). */
function live(c: TokenClaim): Store | undefined {
  const o = c.owner.deref();
  return o === undefined || released.has(o) ? undefined : c.store.deref();
}

/**
 * Checks `owner`'s claims against the live unnamed claims of the same key names made through another state
 * space under the same key prefix (stores whose options could not say they reach different keyspaces):
 * both stores read their keyspace token (`Store.spaceToken`, only then, so a process with one store sends
 * nothing for it), and where the tokens are equal `shared` is told (once). A store that cannot say is not
 * checked.
 */
function confirmState(store: Store, policies: readonly CompiledPolicy[], owner: object, shared: SharedReport): void {
  const prefix = store.stateSpace?.prefix;
  if (store.spaceToken === undefined || prefix === undefined) return;
  const mine: TokenClaim = { owner: new WeakRef(owner), store: new WeakRef(store), space: spaceId(store), prefix };
  const rivals: [CompiledPolicy, Store][] = [];
  for (const p of policies) {
    const claims = (tokenClaims.get(p.id) ?? []).filter((c) => live(c) !== undefined);
    for (const c of claims) {
      const other = live(c);
      if (other !== undefined && c.space !== mine.space && c.prefix === prefix) rivals.push([p, other]);
    }
    claims.push(mine);
    tokenClaims.set(p.id, claims);
  }
  if (rivals.length === 0) return;
  compareTokens(store, rivals, owner, shared, new DoublingWait(), 0);
}

/** The comparisons made while a store's token cannot be read (a Cluster client not ready yet, a read that failed): about 12 s. */
const TOKEN_TRIES = 6;

/**
 * Compares `store`'s keyspace token with each rival's, and tells `shared` of the first equal. A pair where
 * a token could not be read is compared again after a DoublingWait (200 ms, doubling), up to TOKEN_TRIES
 * comparisons, while `owner` is live: a store is often made before its client is ready.
 */
function compareTokens(
  store: Store,
  rivals: readonly [CompiledPolicy, Store][],
  owner: object,
  shared: SharedReport,
  wait: DoublingWait,
  tries: number,
): void {
  wait.started();
  const token = store.spaceToken?.();
  const compared = rivals.map(([p, other]) =>
    Promise.all([token, other.spaceToken?.()]).then(([a, b]) => (a === undefined || b === undefined ? 'unread' : a === b ? p : undefined)),
  );
  void Promise.all(compared).then((found) => {
    if (released.has(owner)) return;
    const p = found.find((x): x is CompiledPolicy => x !== undefined && x !== 'unread');
    if (p !== undefined) return shared(sharedMessage(store, p));
    const unread = rivals.filter((_, i) => found[i] === 'unread');
    if (unread.length === 0 || tries + 1 >= TOKEN_TRIES) return;
    wait.retry(() => {
      if (!released.has(owner)) compareTokens(store, unread, owner, shared, wait, tries + 1);
    });
  }, ignore);
}

function ignore(): void {}

function conflicts(store: Store, unnamed: readonly CompiledPolicy[], owner: object): void {
  const space = spaceOf(store);
  for (const p of unnamed) {
    const holder = space.get(p.id)?.deref();
    if (holder !== undefined && holder !== owner) {
      throw new RateLimitConfigError('ERR_RL_SHARED_STATE', 'name', sharedMessage(store, p), undefined);
    }
  }
}

/** What ERR_RL_SHARED_STATE says of policy `p` in `store`, after "'name' ". */
function sharedMessage(store: Store, p: CompiledPolicy): string {
  const made = p.limiter === undefined ? '' : ` (the adapter named both '${p.limiter}')`;
  return (
    `is missing${made}, and another limiter without a name already keeps its state in this ${typeof store.kind === 'string' ? `${store.kind} ` : ''}store${where(store)} under the same ` +
    `key names (policy '${p.name}', ${p.algorithm}, ${p.windowMs} ms${p.shadow ? ', shadow' : ''}): the two would spend ` +
    "one budget. Give each limiter its own name (createLimiter({ name: 'login', ... }), rateLimit({ name: 'login', ... })), " +
    'or the same name to both to share one budget on purpose'
  );
}

/** Where the keys are, for the message, when another store object may reach them too. */
function where(store: Store): string {
  const w = store.stateSpace?.where;
  return w === undefined ? '' : ` (or another reaching the same keys: ${w})`;
}

/** Frees every claim `owner` holds in `store` (the limiter closed). */
export function releaseState(store: Store, owner: object): void {
  released.add(owner);
  const space = spaceOf(store);
  for (const [id, ref] of space) {
    const holder = ref.deref();
    if (holder === undefined || holder === owner) space.delete(id);
  }
}
