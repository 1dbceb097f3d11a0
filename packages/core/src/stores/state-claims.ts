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

/** Records the claims `checkState` kept for `owner` (its limiter is built); checks them again. */
export function takeState(owner: object): void {
  const claim = pending.get(owner);
  if (claim === undefined) return;
  pending.delete(owner);
  conflicts(claim.store, claim.policies, owner);
  const space = spaceOf(claim.store);
  for (const p of claim.policies) space.set(p.id, new WeakRef(owner));
  // Drop the claims of limiters that were garbage-collected without close().
  for (const [id, ref] of space) if (ref.deref() === undefined) space.delete(id);
}

function conflicts(store: Store, unnamed: readonly CompiledPolicy[], owner: object): void {
  const space = spaceOf(store);
  for (const p of unnamed) {
    const holder = space.get(p.id)?.deref();
    if (holder !== undefined && holder !== owner) {
      throw new RateLimitConfigError(
        'ERR_RL_SHARED_STATE',
        'name',
        `is missing, and another limiter without a name already keeps its state in this ${typeof store.kind === 'string' ? `${store.kind} ` : ''}store${where(store)} under the same ` +
          `key names (policy '${p.name}', ${p.algorithm}, ${p.windowMs} ms${p.shadow ? ', shadow' : ''}): the two would spend ` +
          "one budget. Give each limiter its own name (createLimiter({ name: 'login', ... }), rateLimit({ name: 'login', ... })), " +
          'or the same name to both to share one budget on purpose',
        undefined,
      );
    }
  }
}

/** Where the keys are, for the message, when another store object may reach them too. */
function where(store: Store): string {
  const w = store.stateSpace?.where;
  return w === undefined ? '' : ` (or another reaching the same keys: ${w})`;
}

/** Frees every claim `owner` holds in `store` (the limiter closed). */
export function releaseState(store: Store, owner: object): void {
  const space = spaceOf(store);
  for (const [id, ref] of space) {
    const holder = ref.deref();
    if (holder === undefined || holder === owner) space.delete(id);
  }
}
