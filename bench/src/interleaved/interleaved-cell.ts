/**
 * @module One process of section I: measures one cell's subjects interleaved (interleaved.ts) and answers over IPC.
 */
import { childMain } from '../child-process.js';
import { type InterleavedInput, measureInterleaved } from './interleaved.js';

childMain((input: InterleavedInput) => measureInterleaved(input));
