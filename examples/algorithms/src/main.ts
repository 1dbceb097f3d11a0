/**
 * @module Prints the algorithm comparison: `npx -y pnpm@12.4.2 --filter @tollgate/example-algorithms start`
 * (or `pnpm demo:algorithms` from the repository root). Runs from source; no build needed.
 */
import { compareAlgorithms } from './compare.js';
import { renderComparison } from './render.js';
import { createStream } from './stream.js';

const limit = 10;
const windowMs = 1000;
const phases = createStream(limit, windowMs);
console.log(renderComparison(phases, compareAlgorithms(phases, limit, windowMs), limit, windowMs));
