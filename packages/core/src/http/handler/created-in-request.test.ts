import { describe, expect, it } from 'vitest';
import { createDiagnostics } from '../../diagnostics.js';
import { recordingLogger } from '../../testing/request-view-fixture.js';
import { CREATED_IN_REQUEST_THRESHOLD, CreationWatch } from './created-in-request.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('CreationWatch: a middleware evidently created per request', () => {
  it('warns, once per process, when a second instance gets its first request in the tick it was made', async () => {
    const watch = new CreationWatch();
    const logger = recordingLogger();
    for (let request = 0; request < 5; request++) {
      // What `(req, res, next) => rateLimit(options)(req, res, next)` does: make, then run at once; in an
      // async handler after an await, too.
      if (request % 2 === 1) await Promise.resolve();
      watch.watch()(createDiagnostics(logger));
      await tick();
    }
    expect(CREATED_IN_REQUEST_THRESHOLD).toBe(2);
    expect(logger.warnings).toHaveLength(1);
    expect(logger.warnings[0]).toMatch(/^WRN_RL_CREATED_IN_REQUEST_HANDLER: 2 rate-limit middlewares .*inside a request handler/);
  });

  it('stays silent for instances made at startup, and for one lazy singleton', async () => {
    const watch = new CreationWatch();
    const logger = recordingLogger();
    const atStartup = [watch.watch(), watch.watch(), watch.watch()];
    await tick();
    for (const first of atStartup) first(createDiagnostics(logger));
    // Made on the first request, then kept: one instance.
    watch.watch()(createDiagnostics(logger));
    // Made, then first run after a turn of the event loop (an app built and then served).
    const served = watch.watch();
    await Promise.resolve();
    served(createDiagnostics(logger));
    expect(logger.warnings).toEqual([]);
  });

  it('can be switched off by the instance that would warn; a later one with it on still warns', async () => {
    const watch = new CreationWatch();
    const logger = recordingLogger();
    watch.watch()(createDiagnostics(logger));
    watch.watch()(createDiagnostics(logger, { WRN_RL_CREATED_IN_REQUEST_HANDLER: false }));
    expect(logger.warnings).toEqual([]);
    watch.watch()(createDiagnostics(logger));
    expect(logger.warnings).toHaveLength(1);
  });
});
