/**
 * @module What a request the load shedder turned away leaves behind: no decision was made (the server-
 * wide cap refused it before any policy), so it is not a Decision on `tollgate:decision`, but it is one
 * `tollgate.requests` with `tollgate.result` `shed`, `tollgate.policy` SHED_POLICY and its
 * `tollgate.priority` (and `http.route` where known), and a `tollgate.decision` event on the request's
 * span, like any other refusal. A dashboard sums shed requests with the rate-limited ones.
 */
import type { ShedPriority } from '../shedding/load-shedder.js';
import { BoundedRoutes } from './bounded-routes.js';
import { SHED_POLICY } from './metric-names.js';
import { type CounterCell, counterCell, exporters } from './metric-store.js';
import { recordingSpan } from './otel-meter.js';

export class ShedObserver {
  /** Cells by route ('' for none), then priority: bounded by the routes' bound times four priorities. */
  private readonly cells = new Map<string, Map<ShedPriority, CounterCell>>();
  private readonly routes = new BoundedRoutes();

  constructor(private readonly mode: 'enforce' | 'shadow') {}

  /** One request shed at `priority` (shedding is the rare path: no sampling, no shortcut). */
  shed(priority: ShedPriority, route: string | undefined): void {
    if (exporters.attached) this.cell(priority, route).value += 1;
    recordingSpan()?.addEvent('tollgate.decision', {
      'tollgate.policy': SHED_POLICY,
      'tollgate.result': 'shed',
      'tollgate.mode': this.mode,
      'tollgate.priority': priority,
    });
  }

  private cell(priority: ShedPriority, route: string | undefined): CounterCell {
    const bounded = route === undefined ? '' : this.routes.of(route);
    let byPriority = this.cells.get(bounded);
    if (byPriority === undefined) {
      byPriority = new Map();
      this.cells.set(bounded, byPriority);
    }
    let cell = byPriority.get(priority);
    if (cell === undefined) {
      cell = counterCell('requests', {
        policy: SHED_POLICY,
        result: 'shed',
        mode: this.mode,
        priority,
        ...(bounded === '' ? {} : { route: bounded }),
      });
      byPriority.set(priority, cell);
    }
    return cell;
  }
}
