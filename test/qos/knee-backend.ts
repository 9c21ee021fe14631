// A backend with a hard knee, on virtual time: `capacity` calls are served at once, each in about
// `serviceMs` (±10 %); calls past that wait in a FIFO queue; with `shedAt` × capacity calls in
// flight (served and queued), a new call is answered 503 at once, as a server that sheds load does.
// A call still queued at its timeout is given up. Callers arrive at random (Poisson) and pass a
// gate first: admitted while fewer than its limit are in flight, refused otherwise. Unlike the
// processor-sharing backend (adaptive-backend.ts), a call's latency here is its service time plus
// the queue ahead of it, so a limit that keeps a queue shows in every call's latency, and one that
// grows it for nothing (a ratchet) shows in the trend of the latency over a long run.
import { DrainRate, StandingQueue } from '../../lib/core/index.js';
import type { CallEnd, Gate } from './adaptive-backend.js';
import { Random } from './random.js';

/** One stretch of the run: until `untilMs`, this capacity and these callers. */
export interface KneePhase {
  readonly untilMs: number;
  readonly capacity: number;
  /** Calls arriving per second (Poisson). */
  readonly arrivalsPerSec?: number;
  /** Instead: this many clients, each calling again as soon as its call ends (a closed loop). */
  readonly clients?: number;
}

export interface KneeScenario {
  readonly name: string;
  readonly seed: number;
  /** Service time of a call, ms (uniform within ±10 %). */
  readonly serviceMs: number;
  /** Calls in flight, as a multiple of the capacity, at which a new call gets 503 at once. Default 3. */
  readonly shedAt?: number;
  /** A call still queued at the backend this long after it was admitted is given up, ms; a caller waiting at a gate that waits gives up this long after it arrived. Default 2 000. */
  readonly timeoutMs?: number;
  readonly phases: readonly KneePhase[];
  /** Width of the buckets of `buckets`, ms. Default 10 000. */
  readonly bucketMs?: number;
}

/** What one stretch of time gave. */
export interface KneeStretch {
  readonly fromMs: number;
  readonly untilMs: number;
  /** Calls answered successfully per second. */
  readonly goodput: number;
  readonly meanMs: number;
  readonly p99: number;
  /** The latency of successful calls as their callers saw it, the wait at the gate included: median and 99th percentile, ms. */
  readonly callerP50: number;
  readonly callerP99: number;
  /** Calls the gate refused, at once or at their deadline. */
  readonly refused: number;
  /** Of those, refused at once because the gate's queue stood (controlled waiting). */
  readonly shedStanding: number;
  /** The 99th percentile of the time successful calls waited at the gate, ms. */
  readonly waitP99: number;
  /** Calls answered 503 by the backend. */
  readonly shed: number;
  readonly timeouts: number;
  /** Calls that arrived. */
  readonly arrived: number;
  /** The gate's limit, averaged over the stretch (sampled every 100 ms). */
  readonly meanLimit: number;
}

export interface KneeRun {
  readonly gate: string;
  readonly phases: KneeStretch[];
  /** The run in buckets of `bucketMs`: for trends over a long run. */
  readonly buckets: KneeStretch[];
  /** The first second of the run. */
  readonly firstSecond: KneeStretch;
  /** When each successful call ended and how long it took: [endedAt, ms]. */
  readonly served: [number, number][];
  /** The gate's limit, every 100 ms: [ms, limit]. */
  readonly trace: [number, number][];
  /**
   * On real timers (the bench), when the process's event loop stalled for 10 ms or more: [from,
   * to]. A stall delays every call in flight alike, whatever the limit. None in the simulation.
   */
  readonly stalls?: [number, number][];
}

interface Call {
  readonly startedAt: number;
  readonly inflight: number;
  /** When its caller arrived: before `startedAt` when it waited at the gate. */
  readonly arrivedAt: number;
}

/** A binary min-heap of calls in service by their end time. */
class Serving {
  readonly #ends: number[] = [];
  readonly #calls: Call[] = [];

  get size(): number {
    return this.#ends.length;
  }

  get nextEnd(): number {
    return this.#ends.length === 0 ? Infinity : this.#ends[0]!;
  }

  push(end: number, call: Call): void {
    let i = this.#ends.length;
    this.#ends.push(end);
    this.#calls.push(call);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.#ends[parent]! <= end) break;
      this.#swap(i, parent);
      i = parent;
    }
  }

  pop(): Call {
    const top = this.#calls[0]!;
    const lastEnd = this.#ends.pop()!;
    const lastCall = this.#calls.pop()!;
    if (this.#ends.length > 0) {
      this.#ends[0] = lastEnd;
      this.#calls[0] = lastCall;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < this.#ends.length && this.#ends[l]! < this.#ends[m]!) m = l;
        if (r < this.#ends.length && this.#ends[r]! < this.#ends[m]!) m = r;
        if (m === i) break;
        this.#swap(i, m);
        i = m;
      }
    }
    return top;
  }

  #swap(a: number, b: number): void {
    [this.#ends[a], this.#ends[b]] = [this.#ends[b]!, this.#ends[a]!];
    [this.#calls[a], this.#calls[b]] = [this.#calls[b]!, this.#calls[a]!];
  }
}

/** Counts of one stretch while it runs. */
class Tally {
  latencies: number[] = [];
  waits: number[] = [];
  /** Wait plus latency, per successful call. */
  callers: number[] = [];
  refused = 0;
  shedStanding = 0;
  shed = 0;
  timeouts = 0;
  arrived = 0;
  limitSum = 0;
  limitSamples = 0;

  constructor(
    readonly fromMs: number,
    readonly untilMs: number,
  ) {}

  result(): KneeStretch {
    // Typed arrays sort numbers without a comparator: many times faster over half an hour's calls.
    const sorted = Float64Array.from(this.latencies).sort();
    const n = sorted.length;
    const waits = Float64Array.from(this.waits).sort();
    const callers = Float64Array.from(this.callers).sort();
    const at = (xs: Float64Array, q: number) =>
      xs.length === 0 ? NaN : xs[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
    return {
      fromMs: this.fromMs,
      untilMs: this.untilMs,
      goodput: (n / (this.untilMs - this.fromMs)) * 1_000,
      meanMs: n === 0 ? NaN : sorted.reduce((s, x) => s + x, 0) / n,
      p99: n === 0 ? NaN : sorted[Math.min(n - 1, Math.floor(0.99 * n))]!,
      callerP50: at(callers, 0.5),
      callerP99: at(callers, 0.99),
      refused: this.refused,
      shedStanding: this.shedStanding,
      waitP99: waits.length === 0 ? 0 : waits[Math.min(waits.length - 1, Math.floor(0.99 * waits.length))]!,
      shed: this.shed,
      timeouts: this.timeouts,
      arrived: this.arrived,
      meanLimit: this.limitSamples === 0 ? NaN : this.limitSum / this.limitSamples,
    };
  }
}

/**
 * The stretches a run is counted in: each phase, buckets of `bucketMs`, the first second. The
 * bench's runs on real timers (bench/parts/knee.ts) count theirs the same way.
 */
export class KneeBook {
  readonly #phases: Tally[];
  readonly #buckets: Tally[];
  readonly #first: Tally;
  readonly #bucketMs: number;

  constructor(scenario: KneeScenario) {
    const end = scenario.phases[scenario.phases.length - 1]!.untilMs;
    this.#bucketMs = scenario.bucketMs ?? 10_000;
    let from = 0;
    this.#phases = scenario.phases.map((p) => {
      const t = new Tally(from, p.untilMs);
      from = p.untilMs;
      return t;
    });
    this.#buckets = Array.from(
      { length: Math.ceil(end / this.#bucketMs) },
      (_, i) => new Tally(i * this.#bucketMs, Math.min(end, (i + 1) * this.#bucketMs)),
    );
    this.#first = new Tally(0, Math.min(1_000, end));
  }

  /** The tallies an event at `now` counts in. */
  at(now: number): Tally[] {
    const phase = this.#phases.find((t) => now < t.untilMs) ?? this.#phases[this.#phases.length - 1]!;
    const bucket = this.#buckets[Math.min(this.#buckets.length - 1, Math.floor(now / this.#bucketMs))]!;
    return now < 1_000 ? [phase, bucket, this.#first] : [phase, bucket];
  }

  run(gate: string, served: [number, number][], trace: [number, number][]): KneeRun {
    return {
      gate,
      phases: this.#phases.map((t) => t.result()),
      buckets: this.#buckets.map((t) => t.result()),
      firstSecond: this.#first.result(),
      served,
      trace,
    };
  }
}

/** Runs `scenario` with `gate` in front of the backend. Deterministic for a seed. */
export function runKnee(scenario: KneeScenario, gate: Gate): KneeRun {
  const rnd = new Random(scenario.seed);
  const end = scenario.phases[scenario.phases.length - 1]!.untilMs;
  const shedAt = scenario.shedAt ?? 3;
  const timeoutMs = scenario.timeoutMs ?? 2_000;
  const book = new KneeBook(scenario);
  const tallies = (now: number) => book.at(now);
  const serving = new Serving();
  const queue: Call[] = [];
  let head = 0;
  const served: [number, number][] = [];
  const trace: [number, number][] = [];
  let phase = 0;
  let now = 0;
  const poisson = (p: KneePhase) => (p.arrivalsPerSec === undefined ? Infinity : now + rnd.interval(p.arrivalsPerSec));
  let nextArrival = poisson(scenario.phases[0]!);
  let nextTrace = 0;
  /** Callers waiting at a gate that waits: when each arrived. */
  const waiting: number[] = [];
  let waitHead = 0;
  // A gate with controlled waiting sheds a standing queue as the library's limiters do: the same code.
  const drain = new DrainRate({ now: () => now });
  const control = gate.waiting?.mode === 'controlled' ? gate.waiting : undefined;
  const standing =
    control === undefined
      ? undefined
      : new StandingQueue(
          drain,
          () => gate.limit(now),
          control,
          () => gate.starting?.() === true,
        );
  /** Closed-loop clients ready to call now. */
  let returning = scenario.phases[0]!.clients ?? 0;
  /** Closed-loop clients that were refused call again at these times, a service time later (in order). */
  const retries: number[] = [];
  let retryHead = 0;
  /** A caller's call ended: a closed-loop client calls again, at once, or after a pause if it was refused. */
  const done = (refused = false) => {
    if (scenario.phases[phase]!.clients === undefined) return;
    if (refused) retries.push(now + scenario.serviceMs);
    else returning++;
  };

  const inflight = () => serving.size + queue.length - head;
  const tell = (call: Call, outcome: CallEnd['outcome']) => {
    gate.ended?.(
      { startedAt: call.startedAt, durationMs: now - call.startedAt, inflight: call.inflight, outcome },
      now,
    );
    done();
  };
  const startService = () => {
    const p = scenario.phases[phase]!;
    while (serving.size < p.capacity && head < queue.length) {
      serving.push(now + rnd.around(scenario.serviceMs, 0.1), queue[head++]!);
    }
    if (head > 1_024 && head * 2 > queue.length) {
      queue.splice(0, head);
      head = 0;
    }
  };
  /** A caller through the gate: to the backend, or a 503 at once past its shed point. */
  const admit = (arrivedAt: number) => {
    const n = inflight();
    const call = { startedAt: now, inflight: n + 1, arrivedAt };
    if (n >= shedAt * scenario.phases[phase]!.capacity) {
      for (const t of tallies(now)) t.shed++;
      tell(call, 'overload'); // 503 at once
      return;
    }
    queue.push(call);
    startService();
  };
  /** Waiting callers the limit has room for now, in order. */
  const admitWaiting = () => {
    const before = waitHead;
    while (waitHead < waiting.length && inflight() < gate.limit(now)) {
      const arrivedAt = waiting[waitHead++]!;
      drain.granted();
      standing?.served(now, now - arrivedAt);
      admit(arrivedAt);
    }
    if (waitHead > before && waitHead === waiting.length) drain.emptied();
    if (waitHead > 1_024 && waitHead * 2 > waiting.length) {
      waiting.splice(0, waitHead);
      waitHead = 0;
    }
  };
  const arrive = () => {
    for (const t of tallies(now)) t.arrived++;
    if (waitHead === waiting.length && inflight() < gate.limit(now)) return admit(now);
    if (gate.wait === true) {
      const empty = waitHead === waiting.length;
      if (
        standing === undefined ||
        standing.admits(now, waiting.length - waitHead, empty ? undefined : waiting[waitHead])
      ) {
        if (empty) {
          drain.formed();
          standing?.formed(now);
        }
        return void waiting.push(now);
      }
      for (const t of tallies(now)) t.shedStanding++;
    }
    for (const t of tallies(now)) t.refused++;
    done(true);
  };

  while (now < end) {
    if (returning > 0) {
      returning--;
      arrive();
      continue;
    }
    const p = scenario.phases[phase]!;
    const nextTimeout = head < queue.length ? queue[head]!.startedAt + timeoutMs : Infinity;
    const nextGiveUp = waitHead < waiting.length ? waiting[waitHead]! + timeoutMs : Infinity;
    const nextRetry = retryHead < retries.length ? retries[retryHead]! : Infinity;
    const next = Math.min(nextArrival, serving.nextEnd, nextTimeout, nextGiveUp, nextRetry, nextTrace, p.untilMs);
    now = next;
    if (now === nextRetry) {
      retryHead++;
      arrive();
    } else if (now === nextGiveUp) {
      waitHead++;
      for (const t of tallies(now)) t.refused++; // its deadline passed at the gate
      if (waitHead === waiting.length) drain.emptied();
      done(true);
    } else if (now === nextTrace) {
      const limit = gate.limit(now);
      trace.push([now, limit]);
      for (const t of tallies(now)) {
        t.limitSum += limit;
        t.limitSamples++;
      }
      nextTrace += 100;
    } else if (now === p.untilMs) {
      phase = Math.min(phase + 1, scenario.phases.length - 1);
      const after = scenario.phases[phase]!;
      returning += Math.max(0, (after.clients ?? 0) - (p.clients ?? 0));
      nextArrival = poisson(after);
      startService(); // a capacity that grew serves the queue at once
    } else if (now === serving.nextEnd) {
      const call = serving.pop();
      const ms = now - call.startedAt;
      for (const t of tallies(now)) {
        t.latencies.push(ms);
        t.waits.push(call.startedAt - call.arrivedAt);
        t.callers.push(now - call.arrivedAt);
      }
      served.push([now, ms]);
      tell(call, 'success');
      startService();
    } else if (now === nextTimeout) {
      const call = queue[head++]!;
      for (const t of tallies(now)) t.timeouts++;
      tell(call, 'overload');
    } else {
      nextArrival = poisson(p);
      arrive();
    }
    admitWaiting();
  }
  return book.run(gate.name, served, trace);
}
