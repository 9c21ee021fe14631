// One adaptive limit for every instance of a fleet: its estimate lives in Redis and moves there,
// atomically, by what each instance reports with the calls it makes anyway (an admission, a
// heartbeat): the growth its successes earned and the overloads it saw. No round trip of its
// own. Between answers an instance follows its own reports; each answer sets it right.
// Redis faults never raise the limit: growth that could not be sent is dropped (cuts and pauses
// are kept for the next call), a call Redis runs after its sender gave up on it (a stall) brings
// no growth, growth is not counted while Redis is unreachable, and a Redis that lost the
// estimate (a restart) starts from the instance's last seen one, not the initial.
// The latency without a queue is measured as one instance's is, by a probe at a pinned low
// concurrency, but for the whole fleet: an instance whose probe comes due asks Redis to pin the
// fleet's limit for as long as its probe would take alone, and every instance that hears of the
// pin, in any answer, measures from its share of the pinned calls while it lasts. What a probe
// measured goes to Redis with the next call, so that an instance that starts in a busy fleet takes
// the fleet's floor rather than pinning the fleet for a probe of its own.
import type { Clock } from '../../core/index.js';
import type { LimitAlgorithm, LimitSample } from './limit-algorithms.js';
import type { LimitReport, LimitShare, Taken } from '../redis/index.js';

const NONE: LimitReport = { delta: 0, cut: 0, pauseMs: 0 };

export class SharedLimit implements LimitShare {
  /** The estimate as this instance sees it: Redis's last answer, plus its own reports since. */
  #estimate: number;
  /** Whether Redis ever answered (until then the seed is the algorithm's initial). */
  #seen = false;
  #delta = 0;
  #cut = 0;
  #pauseMs = 0;
  /** A probe through the pause succeeded: the next call ends the fleet's pause. */
  #resume = false;
  /** The algorithm's first estimate: the seed until Redis ever answered. */
  readonly #initial: number;
  /** Redis's clock less this one's, ms, as the last answer told (NaN: not known yet). */
  #offset = NaN;
  /** Ms to ask the fleet to pin the limit for: a probe came due here (0: none). */
  #probeMs = 0;
  /** The algorithm's probes measured so far that went to Redis, and whether it took the fleet's floor. */
  #floorsSent = 0;
  #floorTaken = false;

  constructor(
    readonly algorithm: LimitAlgorithm,
    readonly clock: Clock,
    /** How long this instance waits for a call: a report Redis runs later brings no growth. */
    readonly commandTimeoutMs: number,
    /** The limit moved here, by a report of this instance or an answer of Redis. */
    readonly moved: (from: number, to: number) => void,
  ) {
    this.#estimate = algorithm.estimate;
    this.#initial = algorithm.estimate;
  }

  /** Whether this instance's algorithm still starts slowly (see LimitAlgorithm.starting). */
  get starting(): boolean {
    return this.algorithm.starting;
  }

  get limit(): number {
    return Math.floor(this.#estimate);
  }

  /** A call admitted through Redis ended well. `instances`: how many share the limit now; `fence`: its lease's token. */
  success(sample: LimitSample, instances: number, fence: number): void {
    const { algorithm } = this;
    algorithm.follow(this.#estimate);
    const before = algorithm.estimate;
    const cuts = algorithm.cuts;
    const probing = algorithm.probing;
    algorithm.sample(sample);
    // A probe came due: the fleet's calls must meet no queue, every instance's, not this one's.
    if (!probing && algorithm.probing) this.#probeMs = algorithm.fleetProbeMs(sample.durationMs);
    // A cut by backoff on a success (AIMD's, for a queue building) is a cut as an overload's: once per round for the fleet.
    if (algorithm.cuts !== cuts) return this.#cutTo(algorithm.estimate, fence);
    let delta = algorithm.estimate - before;
    if (delta === 0) return;
    // A window's step is what one instance proposes for the whole limit: each takes its part.
    if (algorithm.growth === 'window') delta /= Math.max(1, instances);
    this.#delta += delta;
    this.#set(before + delta);
  }

  /** A call ended in overload. `fence`: its lease's token (undefined: admitted without Redis). */
  overload(sample: LimitSample, fence: number | undefined, retryAfterMs: number | undefined): void {
    const { algorithm } = this;
    algorithm.follow(this.#estimate);
    algorithm.sample(sample); // cuts here at once (once per round on this instance); Redis decides for the fleet
    this.#cutTo(algorithm.estimate, fence);
    if (retryAfterMs !== undefined) this.#pauseMs = Math.max(this.#pauseMs, retryAfterMs);
  }

  #cutTo(estimate: number, fence: number | undefined): void {
    this.#set(estimate);
    this.#cut = fence === undefined || this.#cut < 0 ? -1 : Math.max(this.#cut, fence);
  }

  /** A probe through the pause succeeded here: the next call tells Redis that the fleet's pause is over (a new pause asked for meanwhile wins). */
  resume(): void {
    this.#resume = true;
  }

  /** The spec of the next call (see redis-scripts' adapt()), and the report it carries. `probe`: the call is a probe through a pause. */
  take(probe = false): Taken {
    const pauseMs = this.#pauseMs > 0 ? Math.ceil(this.#pauseMs) : this.#resume ? -1 : 0;
    const report =
      this.#delta === 0 && this.#cut === 0 && pauseMs === 0 ? NONE : { delta: this.#delta, cut: this.#cut, pauseMs };
    const probeMs = Math.ceil(this.#probeMs);
    const floor = this.algorithm.floor;
    const floorMs = floor.count > this.#floorsSent ? floor.ms : 0;
    this.#floorsSent = floor.count;
    this.#delta = 0;
    this.#cut = 0;
    this.#pauseMs = 0;
    this.#resume = false;
    this.#probeMs = 0;
    // A probe says so in the pause field, unless it carries a pause or its end (either settles what it asks).
    const pauseField = report.pauseMs === 0 && probe ? -2 : report.pauseMs;
    const { min, max, backoff } = this.algorithm;
    const seed = this.#seen ? this.#estimate - report.delta : this.#initial;
    const sentAt = this.clock.now();
    // On Redis's clock, when this instance gives up on the call: later, Redis must not apply its growth.
    const deadline = Number.isNaN(this.#offset) ? 0 : Math.ceil(sentAt + this.#offset + this.commandTimeoutMs);
    return {
      spec: `${num(seed)} ${min} ${max} ${backoff} ${num(report.delta)} ${report.cut} ${pauseField} ${deadline} ${probeMs} ${num(floorMs)}`,
      report,
      sentAt,
      probeMs,
      floorMs,
    };
  }

  /**
   * Redis answered a call: the estimate (× 1000) after it, its clock, and the ms left of a probe
   * the fleet runs. Reports taken since still count.
   */
  answered(taken: Taken, milli: number, serverNow: number, probingMs: number, floorMs: number): void {
    const now = this.clock.now();
    if (Number.isFinite(serverNow)) this.#offset = serverNow - (taken.sentAt + now) / 2;
    if (probingMs > 0) this.algorithm.joinProbe(now, probingMs);
    // Once, at the first answer that knows one: later probes it joins and measures itself.
    if (!this.#floorTaken && floorMs > 0) {
      this.#floorTaken = true;
      this.algorithm.adoptFloor(floorMs);
    }
    if (!(milli >= 0)) return;
    this.#seen = true;
    this.#set(milli / 1000 + this.#delta);
  }

  /** A call failed: its cut and pause go with the next one, its growth is dropped (a fault never raises the limit). */
  failed({ report, probeMs, floorMs }: Taken): void {
    if (probeMs > 0) this.#probeMs = Math.max(this.#probeMs, probeMs);
    if (floorMs > 0) this.#floorsSent--; // sent again with the next call
    if (report === NONE) return;
    if (report.cut !== 0) this.#cut = report.cut < 0 || this.#cut < 0 ? -1 : Math.max(this.#cut, report.cut);
    if (report.pauseMs === -1) this.#resume = true;
    else this.#pauseMs = Math.max(this.#pauseMs, report.pauseMs);
    if (report.delta < 0) this.#delta += report.delta;
    else this.#set(this.#estimate - report.delta);
  }

  #set(estimate: number): void {
    if (Number.isNaN(estimate)) return;
    const from = this.limit;
    this.#estimate = Math.min(this.algorithm.max, Math.max(this.algorithm.min, estimate));
    const to = this.limit;
    if (to !== from) this.moved(from, to);
  }
}

/** A number as the script reads it: no exponent, six decimals at most. */
function num(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toFixed(6);
}
