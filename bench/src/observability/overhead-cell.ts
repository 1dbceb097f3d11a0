/**
 * @module One process of section O: measures one exporter's overhead (overhead.ts) and answers over IPC.
 */
import { childMain } from '../child-process.js';
import { measureOverhead, type OverheadInput } from './overhead.js';

childMain((input: OverheadInput) => measureOverhead(input));
