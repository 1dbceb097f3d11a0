/**
 * @module Test support: a `RequestView` built from a socket address and headers, with real warn-once
 * diagnostics writing to a recording logger. Used by the key extractor tests; not part of the package
 * entry point.
 */
import { createDiagnostics, type ValidateOption } from '../diagnostics.js';
import type { Logger } from '../types.js';
import type { HeaderBag, RequestView } from './request-view.js';

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
    warn: (message) => void warnings.push(message),
    error: (message) => void errors.push(message),
  };
}

export interface ViewFixture<Req> {
  readonly view: RequestView<Req>;
  readonly logger: RecordingLogger;
}

/** A view of one request; pass `logger` to share warn-once state the way one middleware instance does. */
export function requestView<Req = Record<string, never>>(
  init: { remoteAddress?: string; headers?: HeaderBag; request?: Req; validate?: ValidateOption },
  logger: RecordingLogger = recordingLogger(),
): ViewFixture<Req> {
  const diagnostics = createDiagnostics(logger, init.validate);
  const view: RequestView<Req> = {
    remoteAddress: init.remoteAddress,
    headers: init.headers ?? {},
    method: 'GET',
    url: '/',
    request: init.request ?? ({} as Req),
    diagnostics,
  };
  return { view, logger };
}
