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
 * whose options tollgate cannot read: a node-redis Cluster or Sentinel client, `{ sendCommand }`). A store
 * that can read a token of its keyspace from the store itself (`Store.spaceToken`: RedisStore sets one
 * where it is missing) has the claims checked again once it answers (`confirmState`): the same key names
 * under one token through two state spaces are reported to the limiter that came second, which logs
 * `ERR_RL_SHARED_STATE` (it is serving by then: nothing is thrown).
 */
import type { CompiledPolicy } from '../algorithms/kernel.js';
import { RateLimitConfigError } from '../errors.js';
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
 * their name is the user's word. Nothing is recorded yet, so a limiter whose construction fails later
 * (a plan the store refuses) leaves no claim behind.
 */
export function checkState(store: Store, policies: readonly CompiledPolicy[], owner: object): void {
  const unnamed = policies.filter((p) => p.limiter === undefined);
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

/** A claim under a keyspace token: the limiter, and the state space (holder and name) it claimed through. */
interface TokenClaim {
  readonly owner: WeakRef<object>;
  readonly space: string;
}

/** Keyspace token (Store.spaceToken) → policy id → the claim made under it. */
const byToken = new Map<string, Map<string, TokenClaim>>();
/** Limiters closed (`releaseState`): their claims under a token are free. */
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

/**
 * Once `store` says which keyspace it reached (`Store.spaceToken`), checks `owner`'s claims against those
 * made under the same token through another state space: a live limiter there without a name keeps state
 * under the same key names, and `shared` is told (once). A store that cannot say is not checked again.
 */
function confirmState(store: Store, policies: readonly CompiledPolicy[], owner: object, shared: SharedReport): void {
  const reading = store.spaceToken?.();
  if (reading === undefined) return;
  const space = spaceId(store);
  const ref = new WeakRef(owner);
  void reading.then((token) => {
    if (token === undefined || released.has(owner)) return;
    let claims = byToken.get(token);
    if (claims === undefined) {
      claims = new Map();
      byToken.set(token, claims);
    }
    // Drop the claims of limiters closed or garbage-collected since.
    for (const [id, c] of claims) {
      const o = c.owner.deref();
      if (o === undefined || released.has(o)) claims.delete(id);
    }
    let told = false;
    for (const p of policies) {
      const other = claims.get(p.id);
      if (other !== undefined && other.space !== space && other.owner.deref() !== owner) {
        if (!told) shared(sharedMessage(store, p));
        told = true;
        continue;
      }
      claims.set(p.id, { owner: ref, space });
    }
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
  return (
    `is missing, and another limiter without a name already keeps its state in this ${typeof store.kind === 'string' ? `${store.kind} ` : ''}store${where(store)} under the same ` +
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
