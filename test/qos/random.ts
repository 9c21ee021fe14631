/** A seeded generator (mulberry32): the same seed gives the same run. */
export class Random {
  #state: number;

  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Time to the next arrival of a Poisson stream of `perSecond` events, in ms. */
  interval(perSecond: number): number {
    return (-Math.log(1 - this.next()) * 1000) / perSecond;
  }

  /** `mean` spread uniformly by ±`spread` (a fraction of it), never below 0. */
  around(mean: number, spread: number): number {
    return Math.max(0, mean * (1 + spread * (2 * this.next() - 1)));
  }
}
