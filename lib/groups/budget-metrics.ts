import { meterOf, observeEach, type MetricsMeter } from '../core/index.js';
import type { FleetBudgetStats } from './fleet-budget-options.js';

/** What the collection reads of a budget. */
export interface MeasuredBudget {
  stats(): FleetBudgetStats;
}

/**
 * A fleet budget's OpenTelemetry metrics, this instance's view (`nestjs_shared_pool.budget.*`):
 * the places it holds, the fleet's, its quota by demand, the callers waiting elsewhere, the
 * instances heard, and what moved out or lapsed; read from `stats()` when a reader collects.
 */
export class BudgetMetrics {
  /** The budget closed: its series stop. */
  readonly stop: () => void;

  /** The budget's metrics per its `metrics` option, or undefined when there is nowhere to record them. */
  static of(option: boolean | MetricsMeter, budget: MeasuredBudget, name: string): BudgetMetrics | undefined {
    const meter = meterOf(option);
    return meter === null ? undefined : new BudgetMetrics(meter, budget, name);
  }

  constructor(meter: MetricsMeter, budget: MeasuredBudget, name: string) {
    const a = { 'nestjs_shared_pool.budget.name': name };
    const updown = (n: string, unit: string, description: string) =>
      meter.createObservableUpDownCounter(`nestjs_shared_pool.budget.${n}`, { unit, description });
    const counter = (n: string, description: string) =>
      meter.createObservableCounter(`nestjs_shared_pool.budget.${n}`, { unit: '{connection}', description });
    const held = updown(
      'places',
      '{connection}',
      "Places this instance's connections hold, creates and closes included",
    );
    const fleet = updown('fleet_places', '{connection}', 'Places every instance holds, as Redis last counted them');
    const max = updown('max', '{connection}', 'maxTotal: the connections every instance together may have');
    const quota = updown('quota', '{connection}', "This instance's part of the budget by demand, as last planned");
    const elsewhere = updown('pending_requests_elsewhere', '{request}', 'Callers waiting on the other instances');
    const instances = updown('instances', '{instance}', 'Instances heard in the last exchange of demand');
    const moved = counter('moved_out', "Connections closed so that another instance's callers have their places");
    const lapsed = counter('lapsed', 'Places lost while held (a frozen process, or Redis lost them)');
    const all = [held, fleet, max, quota, elsewhere, instances, moved, lapsed];
    this.stop = observeEach(meter, all, (observer) => {
      const s = budget.stats();
      observer.observe(held, s.held, a);
      observer.observe(fleet, s.fleetHeld, a);
      observer.observe(max, s.maxTotal, a);
      observer.observe(quota, s.quota, a);
      observer.observe(elsewhere, s.waitingElsewhere, a);
      observer.observe(instances, s.instances, a);
      observer.observe(moved, s.movedOut, a);
      observer.observe(lapsed, s.lapsed, a);
    });
  }
}
