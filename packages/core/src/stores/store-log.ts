/**
 * @module Where a store's warnings go. Logs belong to the app: a store given no `logger` of its own
 * writes through the logger of the first limiter built on it (`Store.logTo`), under that limiter's
 * `validate` unless the store was given its own. So `rateLimit({ logger: pino, validate: {
 * WRN_RL_CLIENT_RESENDS: false }, store: new RedisStore({ client }) })` puts the store's warnings in pino
 * and silences that one, as docs/errors.md says. A store given its own `logger` keeps it, and its own
 * `validate` (all on by default). Until a limiter comes, `console` (the last resort). A warning a store
 * without a logger raises while it is being built waits for the first limiter that names a logger or a
 * `validate` (every middleware does; a bare `createLimiter()` or a client shaper, which name neither, is
 * not taken for the app's), for the store's first call (no limiter will come first), or 10 s, whichever
 * comes first: Fastify builds a plugin's limiter only when the plugins before it have loaded.
 */
import { createDiagnostics, type Diagnostics, type ValidateOption, type WarningCode } from '../diagnostics.js';
import { consoleLogger, type LogFields, type Logger, safeLog } from '../logging.js';

/** The longest a warning raised while a store without a logger is built waits for a limiter. */
const HOLD_MS = 10_000;

export class StoreLog implements Diagnostics {
  /** The store's lines that are not coded warnings (the eviction watch's, a repaired key's): to the logger in force. */
  readonly logger: Logger = {
    warn: (fields: LogFields, message: string) => safeLog(this.target, 'warn', fields, message),
    error: (fields: LogFields, message: string) => safeLog(this.target, 'error', fields, message),
  };
  private target: Logger;
  private current: Diagnostics;
  /** Codes already warned, kept across a change of logger: each warns once per store. */
  private readonly raised = new Set<string>();
  /** Warnings raised before the first limiter could come, held until the end of the current turn; undefined once flushed. */
  private held: [WarningCode, string, Readonly<Record<string, unknown>> | undefined][] | undefined;
  private adopted = false;

  constructor(
    /** The store's own `logger`, undefined when it was given none. */
    private readonly ownLogger: Logger | undefined,
    /** The store's own `validate`, undefined when it was given none. */
    private readonly ownValidate: ValidateOption | undefined,
  ) {
    this.target = ownLogger ?? consoleLogger;
    this.current = createDiagnostics(this.target, ownValidate ?? true, this.raised);
    if (ownLogger === undefined) {
      this.held = [];
      setTimeout(() => this.flush(), HOLD_MS).unref();
    }
  }

  /** The store's first call, or its close: no limiter takes it first, so held warnings go where they would now. */
  release(): void {
    if (this.held !== undefined) this.flush();
  }

  /** The first limiter built on a store given no logger: where it logs, and what it silences unless the store was told. */
  adopt(logger: Logger, validate: ValidateOption): void {
    if (this.adopted || this.ownLogger !== undefined) return;
    this.adopted = true;
    this.target = logger;
    this.current = createDiagnostics(logger, this.ownValidate ?? validate, this.raised);
    this.flush();
  }

  /** A coded warning, once per store, unless the `validate` in force switches it off. */
  warn(code: WarningCode, message: string, fields?: Readonly<Record<string, unknown>>): void {
    if (this.held !== undefined) this.held.push([code, message, fields]);
    else this.current.warn(code, message, fields);
  }

  /** False when the `validate` in force switches `code` off. */
  enabled(code: WarningCode): boolean {
    return this.current.enabled(code);
  }

  private flush(): void {
    const held = this.held;
    this.held = undefined;
    for (const [code, message, fields] of held ?? []) this.current.warn(code, message, fields);
  }
}
