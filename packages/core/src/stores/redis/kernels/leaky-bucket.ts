/**
 * @module The leaky-bucket kernel in Lua: the gcra kernel, as algorithms/leaky-bucket.ts is the gcra one
 * (a leaky bucket as a meter is GCRA; its delay fields come from the same TAT).
 */
import { gcra } from './gcra.js';
import type { LuaKernel } from './lua.js';

export const leakyBucket: LuaKernel = gcra;
