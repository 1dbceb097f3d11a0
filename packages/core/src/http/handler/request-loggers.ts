/**
 * @module Which logger a request's lines go to: the user's `logger`, else the framework's request logger
 * (Fastify's `request.log`), else the app's, else `console`; every one through the middleware's log
 * budget (logging.ts `createLogGate`), and each with its own warn-once diagnostics.
 */
import { createDiagnostics, type Diagnostics, type ValidateOption } from '../../diagnostics.js';
import { isAbstractNoopLogger, type LogGate, type Logger } from '../../logging.js';

export class RequestLoggers {
  private readonly wrapped = new WeakMap<Logger, Logger>();
  /** Codes already raised, shared by every logger of this middleware: each warns once. */
  private readonly raised = new Set<string>();
  /** The logger of lines not tied to a request, through the budget. */
  readonly base: Logger;
  readonly baseDiagnostics: Diagnostics;

  constructor(
    private readonly userLogger: Logger | undefined,
    private readonly gate: LogGate,
    target: Logger,
    private readonly validate: ValidateOption,
  ) {
    this.base = gate.wrap(target);
    this.baseDiagnostics = createDiagnostics(this.base, validate, this.raised);
  }

  /** The logger of a request that carries `input.logger` (its framework's request logger), if any. */
  of(input: { logger?: Logger | undefined }): Logger {
    if (this.userLogger !== undefined || input.logger === undefined || isAbstractNoopLogger(input.logger)) return this.base;
    let wrapped = this.wrapped.get(input.logger);
    if (wrapped === undefined) {
      wrapped = this.gate.wrap(input.logger);
      this.wrapped.set(input.logger, wrapped);
    }
    return wrapped;
  }

  /** The warn-once diagnostics writing to `logger`. */
  diagnostics(logger: Logger): Diagnostics {
    return logger === this.base ? this.baseDiagnostics : createDiagnostics(logger, this.validate, this.raised);
  }
}
