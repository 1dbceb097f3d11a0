/**
 * @module Derives the key of one described request with the same `RequestView` an adapter builds, and
 * collects the warnings the middleware's logger would print.
 */
import type { HeaderBag, KeyFunction, LogFields, RequestView } from '@tollgate/core';
import { createDiagnostics, formatLine } from '@tollgate/core/adapter';

export interface RequestDescription {
  /** The socket peer address, as `req.socket.remoteAddress` reports it. */
  readonly remoteAddress?: string;
  /** Request headers, lower-case names. */
  readonly headers?: HeaderBag;
  /** What the app knows about the caller (e.g. the signed-in user). */
  readonly user?: { readonly id: string | number };
}

export interface KeyExplanation {
  readonly key: string | undefined;
  readonly warnings: readonly string[];
}

export async function explainKey(key: KeyFunction<RequestDescription>, request: RequestDescription): Promise<KeyExplanation> {
  const warnings: string[] = [];
  const logger = {
    warn: (fields: LogFields, message: string) => void warnings.push(formatLine(fields, message)),
    error: (fields: LogFields, message: string) => void warnings.push(formatLine(fields, message)),
  };
  const view: RequestView<RequestDescription> = {
    remoteAddress: request.remoteAddress,
    headers: request.headers ?? {},
    method: 'GET',
    url: '/',
    request,
    diagnostics: createDiagnostics(logger),
  };
  return { key: await key(request, view), warnings };
}
