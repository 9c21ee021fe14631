// The Redis of a fleet budget, simulated for the QoS suite: the budget's places (one count for
// every instance, callers waiting for one in the order they asked) and the exchange of demand (each
// instance's figures, dated), behind the interface a FleetBudget uses (FleetPlaces). Every call
// costs a round trip of virtual time, as one atomic script on a real server would. No faults: the
// fault tests run on a real Redis (test/groups/fleet-budget-faults.spec.ts).
import type { Admission, AdmissionRequest, TimerHandle } from '../../lib/core/index.js';
import type { FleetPlaces } from '../../lib/groups/fleet-budget-options.js';
import { kDemand } from '../../lib/limits/index.js';
import type { SimClock } from './sim-clock.js';

interface Waiter {
  readonly holder: string;
  readonly grant: (admission: Admission) => void;
  readonly timer: TimerHandle;
}

/** One simulated Redis shared by every instance of a fleet. */
export class SimFleetRedis {
  #used = 0;
  #leases = 0;
  /** Places held per instance. */
  readonly #held = new Map<string, number>();
  readonly #waiters: Waiter[] = [];
  readonly #demand = new Map<string, { figures: string; at: number }>();
  #instances = 0;

  constructor(
    readonly clock: SimClock,
    readonly maxTotal: number,
    /** A round trip to the server, virtual ms. */
    readonly rttMs = 1,
  ) {}

  /** Places held now, every instance's. */
  get used(): number {
    return this.#used;
  }

  /** The places and exchange as one more instance sees them. */
  instance(): FleetPlaces {
    const id = `i${++this.#instances}`;
    const trip = () => this.clock.sleep(this.rttMs);
    return {
      start: async () => {},
      close: async () => {},
      stats: () => ({ used: this.#used, mode: 'redis' }),
      admit: async (request: AdmissionRequest) => {
        await trip();
        return this.#admit(id, request.timeoutMs);
      },
      [kDemand]: {
        instance: id,
        exchange: async (figures: string, staleMs: number) => {
          await trip();
          const now = this.clock.now();
          if (figures === '') this.#demand.delete(id);
          else this.#demand.set(id, { figures, at: now });
          const heard = new Map<string, { figures: string; places: number }>();
          for (const [instance, d] of this.#demand)
            if (now - d.at <= staleMs)
              heard.set(instance, { figures: d.figures, places: this.#held.get(instance) ?? 0 });
          return heard;
        },
      },
    };
  }

  #admit(holder: string, timeoutMs: number): Promise<Admission> {
    if (this.#used < this.maxTotal && this.#waiters.length === 0) return Promise.resolve(this.#lease(holder));
    return new Promise<Admission>((resolve, reject) => {
      const waiter: Waiter = {
        holder,
        grant: resolve,
        timer: this.clock.setTimeout(() => {
          this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
          reject(new Error(`no place of ${this.maxTotal} within ${timeoutMs} ms`));
        }, timeoutMs),
      };
      this.#waiters.push(waiter);
    });
  }

  #lease(holder: string): Admission {
    this.#used++;
    this.#held.set(holder, (this.#held.get(holder) ?? 0) + 1);
    let released = false;
    return {
      id: `lease-${++this.#leases}`,
      signal: new AbortController().signal,
      release: () => {
        if (released) return;
        released = true;
        // A release is a round trip too: the place is free at the server one trip later.
        void this.clock.sleep(this.rttMs).then(() => {
          this.#used--;
          this.#held.set(holder, this.#held.get(holder)! - 1);
          const next = this.#waiters.shift();
          if (next === undefined) return;
          this.clock.clearTimeout(next.timer);
          next.grant(this.#lease(next.holder));
        });
      },
    };
  }
}
