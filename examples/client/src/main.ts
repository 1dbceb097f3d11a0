/**
 * @module `pnpm --filter @tollgate/example-client start`: runs the three scenarios against a 5 r/s partner
 * and prints what each cost the partner.
 */
import { burstThroughShaper, burstWithRetry, pacedPerApiKey } from './scenarios.js';

const CALLS = 15;

function tally(outcomes: readonly (number | string)[]): string {
  const counts = new Map<string, number>();
  for (const o of outcomes) counts.set(String(o), (counts.get(String(o)) ?? 0) + 1);
  return [...counts].map(([k, n]) => `${n} x ${k}`).join(', ');
}

const retried = await burstWithRetry(CALLS);
console.log(`withRetry: ${CALLS} calls at once -> ${tally(retried.outcomes)} in ${retried.ms} ms`);
console.log(
  `  the partner received ${retried.received} requests (${retried.retries} retries after its Retry-After, ${retried.budgetRefused} refused by the retry budget) and served ${retried.served}`,
);

const shaped = await burstThroughShaper(CALLS, 2_000);
console.log(`shaper (5/s, 2 s deadline): ${CALLS} tasks -> ${tally(shaped.outcomes)} in ${shaped.ms} ms`);
console.log(`  the partner received ${shaped.received} requests and served ${shaped.served}: no 429, and no task sent late`);

const paced = await pacedPerApiKey(CALLS, 5, 100);
console.log(`pacing per API key (5/s each): key A fires ${CALLS} calls at once; 100 ms later, A's quota spent, key B fires 5`);
console.log(
  `  key A -> ${tally(paced.a.outcomes)}, the last ${paced.a.lastMs} ms after A's first; key B -> ${tally(paced.b.outcomes)}, the last ${paced.b.lastMs} ms after B's first`,
);
console.log(
  `  when B was done, ${paced.aPendingWhenBDone} of A's calls were still waiting for A's quota: a spent key does not hold another key's calls`,
);
console.log(
  `  the partner received ${paced.received} requests and served ${paced.served}; stats(): pacedMs ${paced.pacedMs} (A's waits, summed), pacedRefused ${paced.pacedRefused} (no wait past maxDelayMs)`,
);
