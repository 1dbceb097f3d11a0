/**
 * @module `pnpm --filter @tollgate/example-shadow-rollout start`: runs the simulation and prints the comparison.
 */
import { formatReport, simulate } from './simulate.js';

console.log(formatReport(await simulate(Number(process.env.MINUTES ?? 3))));
