/**
 * @module A call's signal that follows the caller's: `AbortSignal.any([callerSignal, deadline])`, without
 * Node 20's leak. Node 20 keeps every signal `AbortSignal.any` ever made from a source in a set on that
 * source and never prunes it: a long-lived caller signal (an app-wide shutdown signal) passed to every call
 * grew by one entry per call (100,000 calls: 8 MB, and its abort took 11 ms). Here each source signal gets
 * one abort listener (never one per call, so no MaxListenersExceeded warning) and a set of weak references
 * to the signals that follow it, each pruned once its signal is collected (a FinalizationRegistry), as
 * newer Nodes do. A follower lives as long as someone holds its signal (fetch, while the response's body is
 * read), so an abort after the call returned still ends the body's reading.
 */

/** The controller of a follower signal, kept on the signal so that a weak reference to it can abort it. */
const CONTROLLER = Symbol('tollgate.linked-signal.controller');

interface Follower extends AbortSignal {
  [CONTROLLER]?: AbortController;
}

/** Per source signal, the signals that follow it. */
const followers = new WeakMap<AbortSignal, Set<WeakRef<Follower>>>();

const pruner = new FinalizationRegistry<{ readonly set: Set<WeakRef<Follower>>; readonly ref: WeakRef<Follower> }>(({ set, ref }) => {
  set.delete(ref);
});

/**
 * Whether `value` can be followed as an AbortSignal: the test fetch (undici) makes of a request's signal, so
 * a signal from another realm or an AbortController polyfill passes as it does there.
 */
export function isAbortSignal(value: unknown): value is AbortSignal {
  if (typeof value !== 'object' || value === null) return false;
  const s = value as { aborted?: unknown; addEventListener?: unknown; removeEventListener?: unknown };
  return typeof s.aborted === 'boolean' && typeof s.addEventListener === 'function' && typeof s.removeEventListener === 'function';
}

/** Makes `controller` abort (with the same reason) when `source` aborts, at once when it already has. */
export function follow(source: AbortSignal, controller: AbortController): void {
  if (source.aborted) {
    controller.abort(source.reason);
    return;
  }
  let set = followers.get(source);
  if (set === undefined) {
    const made = new Set<WeakRef<Follower>>();
    followers.set(source, made);
    source.addEventListener(
      'abort',
      () => {
        for (const ref of made) ref.deref()?.[CONTROLLER]?.abort(source.reason);
        made.clear();
      },
      { once: true },
    );
    set = made;
  }
  const signal: Follower = controller.signal;
  signal[CONTROLLER] = controller;
  const ref = new WeakRef(signal);
  set.add(ref);
  pruner.register(signal, { set, ref });
}

/** How many signals follow `source` and have not been collected yet (tests). */
export function followerCount(source: AbortSignal): number {
  return followers.get(source)?.size ?? 0;
}
