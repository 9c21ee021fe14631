/**
 * Measurements that must run in a process of their own (no JIT feedback or promise hook left by
 * another variant). A module measured once per process answers as JSON (`answerWhenRun`). A module
 * measured in rounds sets its variant up (`Rounds`, `serveWhenRun`); run alone, it prints the best
 * of five rounds after a warm-up as JSON. The bench instead keeps one live process per variant
 * and has them run their rounds in turn (`alternating`): two variants' rounds are then taken a
 * fraction of a second apart, under the same load from the rest of the machine, which on a shared
 * VM changes over seconds; and it does so with several sets of processes, since each process has a
 * speed of its own. A process waiting for its turn is blocked on its stdin.
 */
import { execFile, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

/** A variant set up in its process: one round of the measurement (a rate), and its end. */
export interface Rounds {
  round(): Promise<number>;
  close(): Promise<void>;
  /** Rounds run before any is measured. */
  readonly warmRounds: number;
}

const SERVE = '--serve-rounds';

/** Runs the script at `moduleUrl` (an `import.meta.url`) with `args` in a new Node process; its JSON answer (see {@link answerWhenRun}). */
export function inFreshProcess<R>(moduleUrl: string, args: readonly string[]): Promise<R> {
  const script = fileURLToPath(moduleUrl);
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [script, ...args], { timeout: 300_000, maxBuffer: 256 << 20 }, (err, stdout) => {
      if (err !== null) reject(err);
      else resolve(JSON.parse(stdout) as R);
    });
  });
}

/** When the module at `moduleUrl` is the process's entry point: runs `measure` on its arguments and prints the result as JSON. */
export function answerWhenRun(moduleUrl: string, measure: (args: string[]) => Promise<unknown>): void {
  if (process.argv[1] !== fileURLToPath(moduleUrl)) return;
  measure(process.argv.slice(2)).then(
    (result) => process.stdout.write(JSON.stringify(result)),
    (err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}

/** A round of `total` calls made by `callers` concurrent workers, each awaiting its call before the next: calls per second. */
export function callRound(callers: number, call: () => Promise<unknown>): (total: number) => Promise<number> {
  return async (total) => {
    let left = total;
    const worker = async () => {
      while (left-- > 0) await call();
    };
    const started = process.hrtime.bigint();
    await Promise.all(Array.from({ length: callers }, worker));
    return total / (Number(process.hrtime.bigint() - started) / 1e9);
  };
}

/** One live process of a measured module, answering a rate per round asked. */
class LiveProcess {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #answers: ((line: string) => void)[] = [];
  #stderr = '';
  #exited: Error | undefined;

  constructor(script: string, args: readonly string[], execArgv: readonly string[] = []) {
    this.#child = spawn(process.execPath, [...execArgv, script, SERVE, ...args], { stdio: 'pipe' });
    this.#child.stderr.on(
      'data',
      (chunk: Buffer) => void (this.#stderr = (this.#stderr + chunk.toString()).slice(-4_000)),
    );
    createInterface({ input: this.#child.stdout }).on('line', (line) => this.#answers.shift()?.(line));
    const ended = (why: string) => {
      this.#exited ??= new Error(`${script} ${args.join(' ')} ${why}: ${this.#stderr.trim()}`);
      for (const answer of this.#answers.splice(0)) answer('');
    };
    this.#child.on('exit', (code, signal) => ended(`exited (${signal ?? code})`));
    this.#child.on('error', (err) => ended(`could not run (${err.message})`));
  }

  /** Sends a command; the line it answers. */
  #ask(command: string): Promise<string> {
    if (this.#exited !== undefined) return Promise.reject(this.#exited);
    return new Promise((resolve, reject) => {
      this.#answers.push((line) => (line === '' && this.#exited !== undefined ? reject(this.#exited) : resolve(line)));
      this.#child.stdin.write(`${command}\n`);
    });
  }

  async ready(): Promise<void> {
    const line = await this.#ask('warm');
    if (line !== 'ready') throw new Error(`expected ready, got ${line}`);
  }

  async round(): Promise<number> {
    const rate = Number(await this.#ask('round'));
    if (!Number.isFinite(rate)) throw new Error(`a round answered no rate: ${this.#stderr.trim()}`);
    return rate;
  }

  /** The share of its measured rounds' time the process spent collecting garbage (see {@link GcShare}). */
  async gc(): Promise<GcShare> {
    return JSON.parse(await this.#ask('gc')) as GcShare;
  }

  /** The process's own CPU per call in each measured round (see {@link CpuPerCall}). */
  async cpu(): Promise<CpuPerCall[]> {
    return JSON.parse(await this.#ask('cpu')) as CpuPerCall[];
  }

  async close(): Promise<void> {
    if (this.#exited !== undefined) return;
    const gone = new Promise<void>((resolve) => this.#child.once('exit', () => resolve()));
    this.#child.stdin.end('close\n');
    await gone;
  }
}

/**
 * Sets of live processes, one process per variant in each (started and warmed one after the
 * other, so no warm-up competes with another), one set after another; in each set, `rounds` rounds
 * in which each variant runs one round, in turn, each round starting from the next variant. The
 * rates, sets[s][i][variant]. A process has a speed of its own (its JIT's choices, its memory's
 * layout: two processes of the same code differ by up to 15 % here), so a set's rounds share its
 * processes' bias and count as one sample.
 */
export async function alternating<V extends string>(
  /** The measured module (an `import.meta.url`), or each variant's own (the same module of two builds). */
  moduleUrl: string | ((variant: V) => string),
  variants: readonly V[],
  argsOf: (variant: V) => readonly string[],
  sets: number,
  rounds: number,
  /** Told of each set, once its rounds are done: its processes' {@link GcShare}s, and their CPU per call round by round (see {@link CpuPerCall}). */
  observe: SetObserver<V> = {},
  /** Node's own flags for a variant's process (none by default). */
  execArgvOf: (variant: V) => readonly string[] = () => [],
): Promise<Record<V, number>[][]> {
  const scriptOf = (variant: V) => fileURLToPath(typeof moduleUrl === 'string' ? moduleUrl : moduleUrl(variant));
  const out: Record<V, number>[][] = [];
  for (let set = 0; set < sets; set++) {
    const live = new Map<V, LiveProcess>();
    try {
      for (const variant of variants) {
        const p = new LiveProcess(scriptOf(variant), argsOf(variant), execArgvOf(variant));
        live.set(variant, p);
        await p.ready();
      }
      const taken: Record<V, number>[] = [];
      for (let i = 0; i < rounds; i++) {
        const rates = {} as Record<V, number>;
        // Each round starts one variant further on, so that none always runs first or right after
        // the same other: in fixed order, pool.use() measured against itself read 0.94x (0.93-0.98).
        for (let j = 0; j < variants.length; j++) {
          const variant = variants[(i + set + j) % variants.length]!;
          rates[variant] = await live.get(variant)!.round();
        }
        taken.push(rates);
      }
      out.push(taken);
      if (observe.gc !== undefined) {
        const shares = {} as Record<V, GcShare>;
        for (const variant of variants) shares[variant] = await live.get(variant)!.gc();
        observe.gc(shares);
      }
      if (observe.cpu !== undefined) {
        const perRound = taken.map(() => ({}) as Record<V, CpuPerCall>);
        for (const variant of variants)
          (await live.get(variant)!.cpu()).forEach((us, i) => (perRound[i]![variant] = us));
        observe.cpu(perRound);
      }
    } finally {
      await Promise.all([...live.values()].map((p) => p.close()));
    }
  }
  return out;
}

/**
 * {@link alternating} for a module whose variants each take the number of callers: `sets` sets of
 * live processes, one per variant, `rounds` rounds each; `onCpu` is told each set's client CPU per
 * call, round by round.
 */
export function alternatingWithCallers<V extends string>(moduleUrl: string) {
  return (
    variants: readonly V[],
    callers: number,
    sets: number,
    rounds: number,
    onCpu?: (rounds: Record<V, CpuPerCall>[]) => void,
  ): Promise<Record<V, number>[][]> =>
    alternating(moduleUrl, variants, (variant) => [variant, String(callers)], sets, rounds, { cpu: onCpu });
}

/** What {@link alternating} tells of each set once its rounds are done. */
export interface SetObserver<V extends string> {
  /** Each variant's share of its measured rounds in garbage collection. */
  gc?: (shares: Record<V, GcShare>) => void;
  /** Each variant's CPU per call, round by round (rounds[i][variant]), paired as the rates are. */
  cpu?: (rounds: Record<V, CpuPerCall>[]) => void;
}

/**
 * When the module at `moduleUrl` is the process's entry point: sets its variant up from its
 * arguments, then either serves rounds on request (the bench's live process) or prints the best
 * of five rounds after the warm-up as JSON (run by hand).
 */
export function serveWhenRun(moduleUrl: string, setUp: (args: string[]) => Promise<Rounds>): void {
  if (process.argv[1] !== fileURLToPath(moduleUrl)) return;
  const args = process.argv.slice(2);
  const serving = args[0] === SERVE;
  const main = serving ? serve(setUp, args.slice(1)) : once(setUp, args);
  main.then(
    // A live process exits when told to, whatever handle a measured library leaves open.
    () => serving && process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}

async function warm(r: Rounds): Promise<void> {
  for (let i = 0; i < r.warmRounds; i++) await r.round();
}

async function once(setUp: (args: string[]) => Promise<Rounds>, args: string[]): Promise<void> {
  const r = await setUp(args);
  await warm(r);
  let best = 0;
  for (let i = 0; i < 5; i++) best = Math.max(best, await r.round());
  await r.close();
  process.stdout.write(JSON.stringify(best));
}

/** Of a live process's measured rounds: the share of their time spent in garbage collections, from Node's `gc` performance entries (0–1). */
export type GcShare = number;

/**
 * Of a live process's measured round: the CPU time the process itself spent (user and system,
 * `process.cpuUsage()`, all its threads) per call of the round, in µs. Unlike the rate, it leaves
 * out the time the process waited for the rest of the machine: a server on the same cores, or
 * another process's turn on them.
 */
export type CpuPerCall = number;

/** Node delivers a collection's `gc` entry from a native immediate: two turns later it is there. */
async function entriesQueued(): Promise<void> {
  for (let i = 0; i < 2; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/** Times the collections that start within the measured rounds, and the process's CPU in each. */
class RoundTimes {
  /** Entries delivered, not yet counted. */
  #entries: PerformanceEntry[] = [];
  readonly #observer = new PerformanceObserver((list) => void this.#entries.push(...list.getEntries()));
  #roundsMs = 0;
  #gcMs = 0;
  readonly cpu: CpuPerCall[] = [];

  constructor() {
    this.#observer.observe({ entryTypes: ['gc'] });
  }

  async round(r: Rounds): Promise<number> {
    await entriesQueued();
    this.#entries = []; // what came before this round is not its own
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    const rate = await r.round();
    const ended = performance.now();
    const cpuUsed = process.cpuUsage(cpuBefore);
    this.cpu.push((cpuUsed.user + cpuUsed.system) / ((rate * (ended - started)) / 1_000));
    this.#roundsMs += ended - started;
    await entriesQueued();
    for (const e of this.#entries) {
      if (e.startTime >= started && e.startTime <= ended) this.#gcMs += e.duration;
    }
    return rate;
  }

  share(): GcShare {
    return this.#gcMs / this.#roundsMs;
  }

  stop(): void {
    this.#observer.disconnect();
  }
}

async function serve(setUp: (args: string[]) => Promise<Rounds>, args: string[]): Promise<void> {
  let r: Rounds | undefined;
  const times = new RoundTimes();
  for await (const command of createInterface({ input: process.stdin })) {
    if (command === 'warm') {
      r = await setUp(args);
      await warm(r);
      process.stdout.write('ready\n');
    } else if (command === 'round') process.stdout.write(`${await times.round(r!)}\n`);
    else if (command === 'gc') process.stdout.write(`${JSON.stringify(times.share())}\n`);
    else if (command === 'cpu') process.stdout.write(`${JSON.stringify(times.cpu)}\n`);
    else if (command === 'close') break;
  }
  times.stop();
  await r?.close();
}
