/**
 * @module The algorithm registry: id -> kernel.
 */
import type { AlgorithmId } from '../types.js';
import { fixedWindow } from './fixed-window.js';
import { gcra } from './gcra.js';
import type { AlgorithmKernel } from './kernel.js';
import { leakyBucket } from './leaky-bucket.js';
import { slidingLog } from './sliding-log.js';
import { slidingWindow } from './sliding-window.js';
import { tokenBucket } from './token-bucket.js';

export const algorithms: Readonly<Record<AlgorithmId, AlgorithmKernel>> = Object.freeze({
  'fixed-window': fixedWindow,
  'sliding-log': slidingLog,
  'sliding-window': slidingWindow,
  'token-bucket': tokenBucket,
  gcra,
  'leaky-bucket': leakyBucket,
});
