/**
 * @module For tests of callbacks the library does not wait for: the unhandled rejections a run caused,
 * which must be none (each would end a Node process).
 */

/** Runs `fn`, then one more turn of the event loop; returns the unhandled rejections seen meanwhile. */
export async function unhandledDuring(fn: () => Promise<void>): Promise<unknown[]> {
  const seen: unknown[] = [];
  const record = (reason: unknown): void => {
    seen.push(reason);
  };
  process.on('unhandledRejection', record);
  try {
    await fn();
    await new Promise((r) => setImmediate(r));
  } finally {
    process.off('unhandledRejection', record);
  }
  return seen;
}
