/**
 * @module The default key until `keys.ip()` (trusted proxies, IPv6 prefix grouping) is in the core:
 * the socket peer address, namespaced `ip:`. Temporary by design and kept in this one place, so that
 * switching the default to `keys.ip()` is a one-line change.
 */
import type { KeyFunction } from './request-view.js';

export const defaultKey: KeyFunction = (_request, view) => (view.remoteAddress === undefined ? undefined : `ip:${view.remoteAddress}`);
