// The instruments of an admission limiter's waiting: whether its queue stands and how many it
// shed, and, with priority classes, each class's slots, waiters, admissions and refusals. Read
// from the limiter's stats when a reader collects, as the pool's other gauges are.
import type { AdmissionStats } from '../contracts/index.js';

type Attributes = Record<string, string | number | boolean>;
type Options = { description?: string; unit?: string };

/** The part of a Meter these use (see `MetricsMeter`). */
interface ObservableMeter {
  createObservableGauge(name: string, options?: Options): object;
  createObservableCounter(name: string, options?: Options): object;
  createObservableUpDownCounter(name: string, options?: Options): object;
}

/** The instruments, and how one collection observes them from a limiter's stats. */
export interface LimiterInstruments {
  readonly observables: object[];
  observe(
    observer: { observe(o: object, value: number, attributes?: Attributes): void },
    l: AdmissionStats,
    a: Attributes,
  ): void;
}

export function limiterInstruments(meter: ObservableMeter): LimiterInstruments {
  const standing = meter.createObservableGauge('nestjs_shared_pool.limiter.standing', {
    unit: '1',
    description: 'Controlled waiting: 1 while the limiter’s queue stands (newcomers refused at once), else 0',
  });
  const shed = meter.createObservableCounter('nestjs_shared_pool.limiter.shed', {
    unit: '{lease}',
    description: 'Newcomers refused at once because the limiter’s queue stood',
  });
  const classUsed = meter.createObservableUpDownCounter('nestjs_shared_pool.limiter.class.used', {
    unit: '{lease}',
    description: 'Leases held by each priority class, in this process',
  });
  const classWaiting = meter.createObservableUpDownCounter('nestjs_shared_pool.limiter.class.waiting', {
    unit: '{caller}',
    description: 'Callers of each priority class waiting for a slot',
  });
  const classAdmitted = meter.createObservableCounter('nestjs_shared_pool.limiter.class.admitted', {
    unit: '{lease}',
    description: 'Calls of each priority class admitted',
  });
  const classRefused = meter.createObservableCounter('nestjs_shared_pool.limiter.class.refused', {
    unit: '{lease}',
    description: 'Calls of each priority class refused, at once or at their deadline',
  });
  return {
    observables: [standing, shed, classUsed, classWaiting, classAdmitted, classRefused],
    observe(observer, l, a) {
      if (l.standing !== undefined) {
        observer.observe(standing, l.standing.standing ? 1 : 0, a);
        observer.observe(shed, l.standing.shed, a);
      }
      for (const c of l.classes ?? []) {
        const at = { ...a, class: c.name };
        observer.observe(classUsed, c.used, at);
        observer.observe(classWaiting, c.waiting, at);
        observer.observe(classAdmitted, c.admitted, at);
        observer.observe(classRefused, c.refused, at);
      }
    },
  };
}
