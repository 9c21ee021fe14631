import type { Clock } from '../../core/index.js';

/** Timed calls closer than this on average (ms apart) make the sample thinner... */
const DENSE_MS = 0.02;
/** ... and farther apart than this, denser, up to every call. */
const SPARSE_MS = 0.08;
/** The sample is never thinner than one call in this many. */
const MOST_EVERY = 1_024;
/** Admissions averaged over before the sample is made thinner or denser. */
const SPAN = 64;

/**
 * When the calls an adaptive limit learns from begin. A clock read costs a good part of an
 * acquire and release, and a limit needs no more than a few thousand latencies a second to
 * learn from: so once calls come more often than one every 20 µs, only a random sample of them is
 * timed (about one in `every`, chosen so that a timed call comes every 20–80 µs), and the
 * others start at the last reading, earlier than their true start by about that. Slower calls
 * are all timed. The sample is random, not every n-th call, so callers in lockstep cannot alias it.
 */
export class CallTimer {
  /** The last clock reading: the start of a call that is not timed. */
  last = -Infinity;
  /** About one call in this many is timed (a power of two). */
  #every = 1;
  #countdown = 1;
  /** The countdown's start: the admissions from one timed call to the next. */
  #span = 1;
  /** Admissions since `#from` (up to the last timed one), and the reading then: the rate the sample follows. */
  #calls = 0;
  #from = NaN;
  #seed = 0x9e3779b9;

  constructor(readonly clock: Clock) {}

  /** How thin the sample is now: about one call in this many is timed. */
  get every(): number {
    return this.#every;
  }

  /** A call is admitted: whether it is timed (then `last` is its start, just read). */
  admit(): boolean {
    if (--this.#countdown > 0) return false; // the common case of a dense stream: one decrement
    return this.#timed();
  }

  /** The call that ends a countdown: timed, and the sample made thinner or denser on the rate since `#from`. */
  #timed(): true {
    this.#calls += this.#span;
    const now = this.read();
    if (this.#calls >= SPAN) {
      const gap = ((now - this.#from) / this.#calls) * this.#every; // ms between timed calls
      if (!(gap >= 0) || gap > SPARSE_MS)
        this.#every = Math.max(1, this.#every / 2); // a clock that went back: time more
      else if (gap < DENSE_MS) this.#every = Math.min(MOST_EVERY, this.#every * 2);
      this.#calls = 0;
      this.#from = now;
    } else if (Number.isNaN(this.#from)) this.#from = now;
    this.#countdown = this.#span = this.#every === 1 ? 1 : 1 + (this.#random() % (2 * this.#every - 1));
    return true;
  }

  /** The clock now, kept as the start of the calls admitted next without a reading. */
  read(): number {
    const now = this.clock.now();
    this.last = now;
    return now;
  }

  /** xorshift32: cheap, and random enough to place a sample. */
  #random(): number {
    let x = this.#seed;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.#seed = x >>> 0;
    return this.#seed;
  }
}
