/**
 * @module Is a middleware evidently created per request? `app.get('/', (req, res, next) =>
 * rateLimit(options)(req, res, next))` builds a new limiter, with an empty store, for every request, so
 * nothing is ever limited (a limit of 1 admitted 300 of 300 requests) and no error says why. Such an
 * instance gets its first request in the same tick it was made: a microtask queued at construction has
 * not run yet. One instance made on its first request may be a lazy singleton; the second is a pattern,
 * and is warned about once per process (every instance is new, so a per-instance warn-once would log
 * every request). It reads no stack trace and no framework internals, and costs one microtask per
 * instance and nothing per request after an instance's first.
 */
import type { Diagnostics } from '../../diagnostics.js';

/** Instances made in their first request's tick before the warning: one may be a lazy singleton. */
export const CREATED_IN_REQUEST_THRESHOLD = 2;

const CODE = 'WRN_RL_CREATED_IN_REQUEST_HANDLER';

/** The count of one process (a test makes its own). */
export class CreationWatch {
  private createdInRequest = 0;
  private warned = false;

  /** Called when a middleware instance is made; returns the check its first request runs. */
  watch(): (diagnostics: Diagnostics) => void {
    let sameTick = true;
    queueMicrotask(() => {
      sameTick = false;
    });
    return (diagnostics) => {
      if (!sameTick || this.warned) return;
      this.createdInRequest++;
      if (this.createdInRequest < CREATED_IN_REQUEST_THRESHOLD || !diagnostics.enabled(CODE)) return;
      this.warned = true;
      diagnostics.warn(
        CODE,
        `${this.createdInRequest} rate-limit middlewares got their first request in the tick they were created in: they are ` +
          'evidently created inside a request handler, so each request gets a new limiter with an empty store and is never limited. ' +
          'Create the middleware once, at startup (const limiter = rateLimit(options); app.use(limiter)), and use that instance. ' +
          'Warned once per process.',
      );
    };
  }
}

/** The process's watch, shared by every handler. */
export const creationWatch = new CreationWatch();
