/**
 * @module The `http.route` values one limiter reports: the route itself for the first MAX_ROUTES
 * distinct routes, then ROUTE_OVERFLOW, so a router with unbounded paths cannot grow the series.
 */
import { MAX_ROUTES, ROUTE_OVERFLOW } from './metric-names.js';

export class BoundedRoutes {
  private readonly seen = new Set<string>();

  /** `route` while fewer than MAX_ROUTES routes were seen (or it is one of them), else ROUTE_OVERFLOW. */
  of(route: string): string {
    if (this.seen.has(route)) return route;
    if (this.seen.size >= MAX_ROUTES) return ROUTE_OVERFLOW;
    this.seen.add(route);
    return route;
  }
}
