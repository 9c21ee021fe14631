import { meterOf, observeEach, type MetricsMeter } from '../core/index.js';
import type { PoolGroupStats } from './group-stats.js';

/** What the collection reads of a group. */
export interface MeasuredGroup {
  stats(): PoolGroupStats;
}

/**
 * A pool group's own metrics: one series set per group, whatever the number of its members (they
 * record nothing unless asked), read from `stats()` when a reader collects.
 */
export class GroupMetrics {
  /** The group closed: its series stop. */
  readonly stop: () => void;

  /** The group's metrics per its `metrics` option, or undefined when there is nowhere to record them. */
  static of(option: boolean | MetricsMeter, group: MeasuredGroup, name: string): GroupMetrics | undefined {
    const meter = meterOf(option);
    return meter === null ? undefined : new GroupMetrics(meter, group, name);
  }

  constructor(meter: MetricsMeter, group: MeasuredGroup, name: string) {
    const a = { 'nestjs_shared_pool.group.name': name };
    const updown = (n: string, unit: string, description: string) =>
      meter.createObservableUpDownCounter(`nestjs_shared_pool.group.${n}`, { unit, description });
    const connections = updown(
      'connections',
      '{connection}',
      'Connections of every member, from the start of a create to the end of its close: what the server sees',
    );
    const max = updown('max', '{connection}', 'maxTotal: the connections all members may have at once');
    const members = updown('members', '{member}', 'Members (keys) the group has now');
    const waiting = updown('pending_requests', '{request}', 'Callers waiting in every member');
    const transfers = meter.createObservableCounter('nestjs_shared_pool.group.transfers', {
      unit: '{connection}',
      description: 'Connections taken from one member to open for another',
    });
    const utilization = meter.createObservableGauge('nestjs_shared_pool.group.utilization', {
      unit: '1',
      description: 'Callers served over maxTotal × client_limit',
    });
    this.stop = observeEach(meter, [connections, max, members, waiting, transfers, utilization], (observer) => {
      const s = group.stats();
      observer.observe(connections, s.total, a);
      observer.observe(max, s.maxTotal, a);
      observer.observe(members, s.members.length, a);
      observer.observe(waiting, s.waiting, a);
      observer.observe(transfers, s.transfers, a);
      observer.observe(utilization, s.utilization, a);
    });
  }
}
