/**
 * @module Several keys in one decision on Redis Cluster, when the keys live in different slots (one
 * script can only touch one slot): reserve, then confirm or give back.
 *
 * 1. Reserve: the policies are grouped by the slot of their key; each group runs the plan's own script
 *    restricted to its policies (a sub-plan, generated and cached once per plan and group), in parallel,
 *    each atomic on its node. A group charges its policies only if all of them admit, as always.
 * 2. Confirm: when every group charged, the request is admitted; nothing more is sent (one round trip
 *    per slot, in parallel).
 * 3. Give back: when some group refused (or failed), the groups that charged are refunded with the
 *    refund script and the receipts' marks (scripts/peek-refund-scripts.ts), which takes back exactly those charges;
 *    the request is refused, and reported as the single-node script would report it (the policies that
 *    admitted show the remaining as it stands, not charged).
 *
 * Guarantee: never admits more than any policy allows. A policy is only ever charged by its own
 * atomic script when it admits, and a request counts as admitted only when every policy charged; a
 * charge that is given back was never part of an admitted request. What it may over-reject: between a
 * reservation and its give-back (one round trip to the refusing slot, in parallel, plus the give-back's
 * own round trip: about 2 x RTT, well under a millisecond on a LAN), another request on the same key may
 * see the reserved units as used and be refused. Should the give-back itself fail (the node went away
 * mid-request), the reservation stays until the state lets it go: the end of the window (fixed-window,
 * sliding-log; sliding-window's counter weighs it for two windows), or `cost / rate` for the buckets.
 */
import { keySlot } from './cluster-slot.js';

/** Plan positions grouped by the slot of their key name; undefined when they all share one slot. */
export function slotGroups(names: readonly string[]): number[][] | undefined {
  const bySlot = new Map<number, number[]>();
  for (let i = 0; i < names.length; i++) {
    const s = keySlot(names[i] as string);
    const g = bySlot.get(s);
    if (g === undefined) bySlot.set(s, [i]);
    else g.push(i);
  }
  return bySlot.size <= 1 ? undefined : [...bySlot.values()];
}
