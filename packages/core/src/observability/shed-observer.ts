/**
 * @module What a request the load shedder turned away leaves behind: no decision was made (the server-
 * wide cap refused it before any policy), so it is not a Decision on `tollgate:decision`, but it is one
 * `tollgate.requests` with `tollgate.result` `shed`, `tollgate.policy` SHED_POLICY and its
 * `tollgate.priority` (and `http.route` where known), and a `tollgate.decision` event on the request's
 * span, like any other refusal. A dashboard sums shed requests with the rate-limited ones.
 */
import type { ShedPriority } from '../shedding/load-shedder.js';
import { BoundedRoutes } from './bounded-routes.js';
import { limiterAttribute, limiterLabel, SHED_POLICY } from './metric-names.js';
import { counterCell, exporters } from './metric-store.js';
import { recordingSpan } from './otel-meter.js';

export class ShedObserver {
  private readonly routes = new BoundedRoutes();

  /** The limiter's `name` as a label and as a span attribute; empty without one. */
  private readonly label: { readonly limiter?: string };
  private readonly attribute: Readonly<Record<string, string>>;

  constructor(
    private readonly mode: 'enforce' | 'shadow',
    /** The limiter's `name`, its `tollgate.limiter`; undefined without one. */
    limiter: string | undefined,
  ) {
    this.label = limiterLabel(limiter);
    this.attribute = limiterAttribute(limiter);
  }

  /**
   * One request shed at `priority`. Its cell is found by its labels in the metric store (a few hundred
   * nanoseconds, next to writing a 503), which keeps the one copy of the cells.
   */
  shed(priority: ShedPriority, route: string | undefined): void {
    if (exporters.attached) {
      const bounded = route === undefined ? undefined : this.routes.of(route);
      const labels = { policy: SHED_POLICY, result: 'shed', mode: this.mode, priority } as const;
      const named = { ...labels, ...this.label };
      counterCell('requests', bounded === undefined ? named : { ...named, route: bounded }).value += 1;
    }
    recordingSpan()?.addEvent('tollgate.decision', {
      'tollgate.policy': SHED_POLICY,
      'tollgate.result': 'shed',
      'tollgate.mode': this.mode,
      'tollgate.priority': priority,
      ...this.attribute,
    });
  }
}
