/**
 * @module `pnpm --filter @tollgate/example-concurrency start`: runs both demonstrations and prints them.
 */
import { burstExports, compareShedding } from './scenarios.js';

const burst = await burstExports();
console.log('Export capped per user (concurrency limit 2, queue 2):');
console.log(`  alice sends 6 at once -> statuses ${burst.alice.join(' ')} (most running at once: ${burst.peak})`);
console.log(`  bob, meanwhile       -> ${burst.bob}`);

console.log('\nOverload: /work on a pool of 4 x 20 ms (200 req/s), offered 400 req/s for 3 s, open loop:');
const { protectedRun: p, unprotectedRun: u, finalLimit } = await compareShedding();
const row = (name: string, r: typeof p) =>
  `  ${name.padEnd(22)} 200s ${String(r.byStatus['200'] ?? 0).padStart(5)}  503s ${String(r.byStatus['503'] ?? 0).padStart(5)}  ` +
  `p50 ${String(r.ok.p50).padStart(5)} ms  p99 ${String(r.ok.p99).padStart(5)} ms  goodput ${r.goodput}/s`;
console.log(row('adaptive shedding', p));
console.log(row('unprotected twin', u));
console.log(`  (the shedder settled at a limit of ${finalLimit} requests in flight; its 503s took p99 ${p.refusedP99} ms)`);
