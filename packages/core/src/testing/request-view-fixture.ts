/**
 * @module Test support: a `RequestView` built from a socket address and headers, with real warn-once
 * diagnostics writing to a recording logger. Used by the key extractor tests; not part of the package
 * entry point.
 */
import { createDiagnostics, type ValidateOption } from '../diagnostics.js';
import type { HeaderBag, RequestView } from '../http/request-view.js';
import { formatLine, type Logger } from '../logging.js';

export interface RecordingLogger extends Logger {
  /** Every message passed to `warn`, in order. */
  readonly warnings: string[];
  /** Every message passed to `error`, in order. */
  readonly errors: string[];
}

export function recordingLogger(): RecordingLogger {
  const warnings: string[] = [];
  const errors: string[] = [];
  return {
    warnings,
    errors,
    warn: (fields, message) => void warnings.push(formatLine(fields, message)),
    error: (fields, message) => void errors.push(formatLine(fields, message)),
  };
}

export interface RequestInit<Req> {
  remoteAddress?: string | undefined;
  headers?: HeaderBag;
  request?: Req;
}

/**
 * One middleware instance's worth of views: every view shares one warn-once `Diagnostics` writing to
 * `logger`.
 */
export function viewFactory(validate?: ValidateOption, logger: RecordingLogger = recordingLogger()) {
  const diagnostics = createDiagnostics(logger, validate);
  return {
    logger,
    diagnostics,
    view<Req = Record<string, never>>(init: RequestInit<Req>): RequestView<Req> {
      return {
        remoteAddress: init.remoteAddress,
        headers: init.headers ?? {},
        method: 'GET',
        url: '/',
        request: init.request ?? ({} as Req),
        diagnostics,
      };
    },
  };
}

/** A view of one request with its own diagnostics and recording logger. */
export function requestView<Req = Record<string, never>>(
  init: RequestInit<Req> & { validate?: ValidateOption },
  logger?: RecordingLogger,
): { view: RequestView<Req>; logger: RecordingLogger } {
  const factory = viewFactory(init.validate, logger);
  return { view: factory.view(init), logger: factory.logger };
}
