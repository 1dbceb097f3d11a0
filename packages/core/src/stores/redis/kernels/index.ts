/**
 * @module Every algorithm's Lua kernel by id, the twins of algorithms/index.ts.
 */
import type { AlgorithmId } from '../../../types.js';
import { fixedWindow } from './fixed-window.js';
import { gcra } from './gcra.js';
import { leakyBucket } from './leaky-bucket.js';
import type { LuaKernel } from './lua.js';
import { slidingLog } from './sliding-log.js';
import { slidingWindow } from './sliding-window.js';
import { tokenBucket } from './token-bucket.js';

/** The Lua fragments of every algorithm of the core. */
export const LUA_KERNELS: Readonly<Record<AlgorithmId, LuaKernel>> = Object.freeze({
  'fixed-window': fixedWindow,
  'sliding-window': slidingWindow,
  'token-bucket': tokenBucket,
  gcra,
  'leaky-bucket': leakyBucket,
  'sliding-log': slidingLog,
});
