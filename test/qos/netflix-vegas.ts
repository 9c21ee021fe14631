// A port of Netflix concurrency-limits' VegasLimit with its defaults, fed call by call, as a gate
// of the simulations: the anchor the docs' picture sets the default algorithm beside. Its no-load
// latency is the least latency of any one call, reset to the current call's every
// probeMultiplier (30) × limit calls, jittered; its queue estimate is limit × (1 − noLoad / rtt),
// kept between α = 3·log10(limit) and β = 6·log10(limit). Written from its published behaviour,
// for comparison only.
import type { Gate } from './adaptive-backend.js';
import { Random } from './random.js';

export function netflixVegasGate({ initial = 20, max = 1_000, seed = 1, wait = false } = {}): Gate {
  const rnd = new Random(seed);
  const log = (limit: number) => Math.max(1, Math.log10(limit));
  let estimate = initial;
  let noLoad = 0;
  let probeCount = 0;
  let probeJitter = 0.5 + rnd.next() / 2;
  return {
    name: 'Netflix-style vegas',
    wait,
    limit: () => Math.floor(estimate),
    ended(end) {
      const rtt = end.durationMs;
      probeCount++;
      if (probeJitter * 30 * estimate <= probeCount) {
        // The probe: this call's latency becomes the no-load latency, whatever queue it met.
        probeJitter = 0.5 + rnd.next() / 2;
        probeCount = 0;
        noLoad = rtt;
        return;
      }
      if (noLoad === 0 || rtt < noLoad) {
        noLoad = rtt;
        return;
      }
      let next: number;
      if (end.outcome === 'overload') next = estimate - log(estimate);
      else if (end.inflight * 2 < estimate) return;
      else {
        const queue = Math.ceil(estimate * (1 - noLoad / rtt));
        const l = log(estimate);
        if (queue <= l) next = estimate + 6 * l;
        else if (queue < 3 * l) next = estimate + l;
        else if (queue > 6 * l) next = estimate - l;
        else return;
      }
      estimate = Math.max(1, Math.min(max, next));
    },
  };
}
