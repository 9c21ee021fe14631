import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { RedisServer } from '../support/redis-server.js';
import { compile, root } from '../support/compile.js';

// Four processes × 25 workers share one Redis with a global limit of 50 and 5 per key (10 keys).
// Midway one process is killed with SIGKILL while it holds leases, and later Redis itself is
// killed and restarted. A sweep over every logged lease interval then checks that the limits held
// at every instant. A control run without restart protection shows the sweep catches over-admission.
// Then 4 processes × 12 workers live through stalls longer than the TTL: Redis frozen (SIGSTOP,
// CLIENT PAUSE, DEBUG SLEEP) or one holder's event loop blocked, five times each.

const dist = join(root, 'dist-test');
const worker = fileURLToPath(new URL('./fixtures/lease-worker.mjs', import.meta.url));
const TTL_MS = 1_000;
const now = () => process.hrtime.bigint();
const ms = (ns: bigint) => Number(ns / 1_000_000n);
const sleep = (t: number) => new Promise((r) => setTimeout(r, t));

interface Interval {
  id: string;
  key: string;
  start: bigint;
  end: bigint;
  /** When the limiter aborted the lease's signal (0n: never). */
  lost: bigint;
  /** Steps of work that found the lease held, by instant. */
  steps: bigint[];
  proc: number;
}

interface Run {
  intervals: Interval[];
  killedAt: bigint;
  killedLeasesGoneAfterMs: number;
  redisBackAt: bigint;
}

/** Most intervals open at once, per group; a release at the same instant as an acquire comes first. */
function maxConcurrency(intervals: Interval[], group: (i: Interval) => string): Map<string, number> {
  const events: [bigint, number, string][] = [];
  for (const i of intervals) events.push([i.start, 1, group(i)], [i.end, -1, group(i)]);
  events.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
  const open = new Map<string, number>();
  const most = new Map<string, number>();
  for (const [, delta, g] of events) {
    const n = (open.get(g) ?? 0) + delta;
    open.set(g, n);
    most.set(g, Math.max(most.get(g) ?? 0, n));
  }
  return most;
}

async function run(server: RedisServer, protect: boolean): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'leases-'));
  const namespace = `mp-${protect ? 'on' : 'off'}-${Date.now()}`;
  const procs: ChildProcess[] = [];
  for (let p = 0; p < 4; p++) {
    const child = spawn(
      process.execPath,
      [worker, dist, server.url, namespace, join(dir, `p${p}.log`), '25', '10', protect ? '1' : '0'],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    procs.push(child);
    await once(child.stdout!, 'data');
  }
  const inspector = new Redis(server.url, { maxRetriesPerRequest: 1 });
  inspector.on('error', () => {});
  try {
    await sleep(TTL_MS + 2_000); // past the first quarantine of a fresh namespace, then steady

    // SIGKILL one instance while it holds leases; its leases must leave Redis within a TTL.
    const victim = procs[3];
    // The last process started gets few slots (instances are not served in arrival order), and
    // under load it may hold none for a while: wait for a few leases, or at least one.
    for (let i = 0; i < 250 && openLeases(readLog(dir, 3)).length < 3; i++) await sleep(20);
    for (let i = 0; i < 1_000 && openLeases(readLog(dir, 3)).length === 0; i++) await sleep(20);
    const killedAt = now();
    victim.kill('SIGKILL');
    await once(victim, 'exit');
    const orphaned = openLeases(readLog(dir, 3)).map((l) => l.id);
    let killedLeasesGoneAfterMs = -1;
    while (ms(now() - killedAt) < TTL_MS * 3) {
      const scores = orphaned.length === 0 ? [] : await inspector.zmscore(`{${namespace}}:g`, ...orphaned);
      if (scores.every((s) => s === null)) {
        killedLeasesGoneAfterMs = ms(now() - killedAt);
        break;
      }
      await sleep(20);
    }
    expect(orphaned.length).toBeGreaterThan(0);

    await sleep(500);
    // Kill Redis and start it again, empty: it forgot every lease.
    await server.stop();
    await sleep(300);
    await server.start();
    const redisBackAt = now();
    await sleep(TTL_MS * 2.5);

    for (const child of procs.slice(0, 3)) child.kill('SIGTERM');
    await Promise.all(procs.slice(0, 3).map((c) => (c.exitCode === null ? once(c, 'exit') : undefined)));

    const intervals: Interval[] = [];
    for (let p = 0; p < 4; p++) {
      for (const lease of [...closedLeases(readLog(dir, p)), ...openLeases(readLog(dir, p))]) {
        // The killed process's open leases end when it died; the others all closed theirs.
        intervals.push({ ...lease, end: lease.end === 0n ? killedAt : lease.end, proc: p });
      }
    }
    return { intervals, killedAt, killedLeasesGoneAfterMs, redisBackAt };
  } finally {
    for (const child of procs) if (child.exitCode === null) child.kill('SIGKILL');
    inspector.disconnect();
  }
}

function readLog(dir: string, p: number): string[] {
  return readFileSync(join(dir, `p${p}.log`), 'utf8')
    .split('\n')
    .filter(Boolean);
}

/** A frozen event loop, as the worker logged it. */
interface Freeze {
  start: bigint;
  end: bigint;
}

function parse(lines: string[]): Map<string, Omit<Interval, 'proc'>> {
  const leases = new Map<string, Omit<Interval, 'proc'>>();
  for (const line of lines) {
    const [kind, id, key, at] = line.split(' ');
    if (kind === 'A') leases.set(id, { id, key, start: BigInt(at), end: 0n, lost: 0n, steps: [] });
    else if (kind === 'W') leases.get(id)!.steps.push(BigInt(at));
    else if (kind === 'L') leases.get(id)!.lost = BigInt(at);
    else if (kind === 'R') leases.get(id)!.end = BigInt(at);
  }
  return leases;
}

function freezes(lines: string[]): Freeze[] {
  return lines
    .filter((l) => l.startsWith('F '))
    .map((l) => ({ start: BigInt(l.split(' ')[1]), end: BigInt(l.split(' ')[2]) }));
}

/** What the limiter admitted: a lease counts until released or until its signal aborted. */
const admitted = (i: Interval): Interval => (i.lost !== 0n && i.lost < i.end ? { ...i, end: i.lost } : i);

const openLeases = (lines: string[]) => [...parse(lines).values()].filter((l) => l.end === 0n);
const closedLeases = (lines: string[]) => [...parse(lines).values()].filter((l) => l.end !== 0n);

const inspect = (server: RedisServer) => {
  const client = new Redis(server.url, { maxRetriesPerRequest: 0 });
  client.on('error', () => {});
  return client;
};

/** The stalls of the hostile review: Redis frozen three ways, or one holder's event loop blocked. */
const stallKinds = {
  'SIGSTOP of the server': async (server: RedisServer) => {
    server.pause();
    await sleep(TTL_MS * 1.5);
    server.resume();
  },
  'CLIENT PAUSE ALL': async (server: RedisServer) => {
    const client = inspect(server);
    await client.call('CLIENT', 'PAUSE', String(TTL_MS * 1.5), 'ALL');
    client.disconnect();
    await sleep(TTL_MS * 1.5);
  },
  'DEBUG SLEEP': async (server: RedisServer) => {
    const client = inspect(server);
    await client.call('DEBUG', 'SLEEP', String((TTL_MS * 1.5) / 1_000)); // answers when Redis wakes
    client.disconnect();
  },
  "a holder's event loop blocked for 2 TTL": async (_server: RedisServer, holder: ChildProcess) => {
    holder.kill('SIGUSR2'); // the worker busy-loops for 2 TTL, and logs the freeze itself
    await sleep(TTL_MS * 2);
  },
  'a holder stopped (SIGSTOP) for 2 TTL': async (_server: RedisServer, holder: ChildProcess) => {
    // A container or VM paused, a debugger: the process runs nothing, not even a signal handler.
    const start = now();
    holder.kill('SIGSTOP');
    await sleep(TTL_MS * 2);
    const end = now();
    holder.kill('SIGCONT');
    return { start, end };
  },
} satisfies Record<string, (server: RedisServer, holder: ChildProcess) => Promise<Freeze | void>>;

/** The stalls that freeze one holder process (the others freeze Redis). */
const holderFreezes = ["a holder's event loop blocked for 2 TTL", 'a holder stopped (SIGSTOP) for 2 TTL'] as const;

/** Every lease of a stalled run, and the frozen event loops of its processes. */
interface StalledRun {
  intervals: Interval[];
  freezes: (Freeze & { proc: number })[];
}

/** The stall runs' limits, as in the hostile review. */
const STALL = { workers: 12, keys: 7, global: 20, perKey: 3 };

/**
 * Stalls: 4 processes × 12 workers (global 20, 3 per key, TTL 1 s) live through `stalls` stalls
 * of one kind, each longer than the TTL, with the data kept. Returns every lease interval.
 */
async function stalled(server: RedisServer, kind: keyof typeof stallKinds, stalls: number): Promise<StalledRun> {
  const dir = mkdtempSync(join(tmpdir(), 'stalls-'));
  const namespace = `stall-${Date.now()}`;
  const procs: ChildProcess[] = [];
  const parentFreezes: StalledRun['freezes'] = [];
  for (let p = 0; p < 4; p++) {
    // Holds of 4-8 s outlast the stalls: leases admitted before a stall still run after it, and
    // the limit is full when Redis resumes. Refused callers wait up to 3 s, so the limiter polls
    // for them during the stall: a poll sent in its last TTL still runs when Redis resumes. The
    // heartbeat runs every TTL / 3 and commands time out after 1 s, as by default.
    const args = [
      worker,
      dist,
      server.url,
      namespace,
      join(dir, `p${p}.log`),
      String(STALL.workers),
      String(STALL.keys),
      '1',
      String(STALL.global),
      String(STALL.perKey),
      '4000',
      '8000',
      '333',
      String(TTL_MS * 2),
      'default',
      '3000',
    ];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    procs.push(child);
    await once(child.stdout!, 'data');
  }
  try {
    await sleep(TTL_MS + 1_500); // past the first quarantine, then steady
    for (let s = 0; s < stalls; s++) {
      const frozen = await stallKinds[kind](server, procs[s % procs.length]!);
      if (frozen) parentFreezes.push({ ...frozen, proc: s % procs.length });
      await sleep(TTL_MS * 3.5);
    }
    for (const child of procs) child.kill('SIGTERM');
    await Promise.all(procs.map((c) => (c.exitCode === null ? once(c, 'exit') : undefined)));
  } finally {
    server.resume();
    for (const child of procs) if (child.exitCode === null) child.kill('SIGKILL');
  }
  const run: StalledRun = { intervals: [], freezes: parentFreezes };
  for (let p = 0; p < 4; p++) {
    const lines = readLog(dir, p);
    for (const lease of parse(lines).values()) run.intervals.push({ ...lease, proc: p });
    for (const freeze of freezes(lines)) run.freezes.push({ ...freeze, proc: p });
  }
  return run;
}

/**
 * A frozen process runs nothing, neither its work nor its limiter, until it runs again: what it
 * held when it froze ends, for the limiter, at the freeze, provided that its signal aborted (the
 * limiter reported it lost) first thing on resume, before the process was admitted anything new.
 * A lease aborted later, or never, counts until its abort or release: other processes were given
 * its slot meanwhile, so it shows as over-admission. Other leases as {@link admitted}.
 */
function admittedAcrossFreezes(run: StalledRun): Interval[] {
  return run.intervals.map((i) => {
    const freeze = run.freezes.find((f) => f.proc === i.proc && i.start < f.start && (i.end === 0n || i.end > f.start));
    if (freeze === undefined) return admitted(i);
    if (i.lost !== 0n && i.lost <= firstAdmissionAfter(run, freeze)) return { ...i, end: freeze.start };
    return admitted(i);
  });
}

/** When the frozen process was first admitted a lease after its freeze ended (never: the end of time). */
function firstAdmissionAfter(run: StalledRun, f: Freeze & { proc: number }): bigint {
  let first = 1n << 62n;
  for (const i of run.intervals) if (i.proc === f.proc && i.start > f.end && i.start < first) first = i.start;
  return first;
}

/**
 * The leases a frozen process held across a freeze that it neither gave back nor saw aborted
 * before it was admitted anything after it: it went on under leases Redis had given away.
 */
/**
 * The steps of work that ran after a freeze of their process under a lease held across it, which
 * Redis had given away: each checked `lease.signal` and was told the lease still held.
 */
function stepsAfterFreezes(run: StalledRun): string[] {
  const found: string[] = [];
  for (const f of run.freezes) {
    for (const i of run.intervals) {
      if (i.proc !== f.proc || i.start >= f.start || (i.end !== 0n && i.end <= f.start)) continue;
      for (const step of i.steps)
        if (step > f.end) found.push(`lease ${i.id}: a step ${ms(step - f.end)} ms after the freeze ended`);
    }
  }
  return found;
}

function keptAcrossFreezes(run: StalledRun): Interval[] {
  return run.intervals.filter((i) => {
    const freeze = run.freezes.find((f) => f.proc === i.proc && i.start < f.start && (i.end === 0n || i.end > f.start));
    if (freeze === undefined) return false;
    const after = firstAdmissionAfter(run, freeze);
    const endedBy = i.lost !== 0n ? i.lost : i.end !== 0n ? i.end : 1n << 62n;
    return endedBy > after;
  });
}

/** Freezes of a holder per phase: `NSP_FREEZES` overrides (the acceptance run used 20). */
const FREEZES = Number(process.env.NSP_FREEZES ?? 5);

/**
 * The most leases admitted at once, globally and per key, with a frozen process's leases ended at
 * its freeze when it aborted them first thing on resume. Logs, for the record, what the hostile
 * review measured (a lease counts from its admission until its signal aborts or it is released,
 * the freeze included) and what work that ignored the signal did.
 */
function limitsHeld(kind: string, run: StalledRun): { global: number; perKey: number } {
  const byLimiter = admittedAcrossFreezes(run);
  const global = maxConcurrency(byLimiter, () => 'all').get('all')!;
  const perKey = Math.max(...maxConcurrency(byLimiter, (i) => i.key).values());
  const untilAbort = run.intervals.map(admitted);
  const inFreeze = maxConcurrency(untilAbort, () => 'all').get('all')!;
  const ignoring = maxConcurrency(run.intervals, () => 'all').get('all')!;
  const lost = run.intervals.filter((i) => i.lost !== 0n).length;
  console.log(
    `${kind}: the limiter admitted at most ${global} globally and ${perKey} per key; counted until each signal aborted ` +
      `(the freeze included) ${inFreeze}; work ignoring lease.signal ran up to ${ignoring}; ${lost} leases lost`,
  );
  return { global, perKey };
}

describe('limits across processes on one Redis', () => {
  let server: RedisServer;

  beforeAll(async () => {
    compile('tsconfig.build.json', dist);
    server = await RedisServer.start(['--enable-debug-command', 'yes']);
  }, 60_000);

  afterAll(async () => {
    await server.stop();
  });

  it('never exceeds 50 globally or 5 per key, through a SIGKILLed holder and a Redis restart', async () => {
    const result = await run(server, true);
    const global = maxConcurrency(result.intervals, () => 'all').get('all')!;
    const perKey = Math.max(...maxConcurrency(result.intervals, (i) => i.key).values());
    expect(global).toBeLessThanOrEqual(50);
    expect(perKey).toBeLessThanOrEqual(5);
    expect(global).toBeGreaterThanOrEqual(45); // the limit was actually reached: the test had teeth

    // The killed holder's leases left Redis within one TTL and a small margin.
    expect(result.killedLeasesGoneAfterMs).toBeGreaterThanOrEqual(0);
    expect(result.killedLeasesGoneAfterMs).toBeLessThanOrEqual(TTL_MS + 300);

    // After the restart, nobody was admitted during the quarantine, and admissions resumed after it.
    const after = result.intervals
      .filter((i) => i.start > result.redisBackAt)
      .map((i) => ms(i.start - result.redisBackAt));
    expect(Math.min(...after)).toBeGreaterThanOrEqual(TTL_MS - 50);
    expect(after.length).toBeGreaterThan(20);
  }, 60_000);

  // Without local expiry and stall detection (the code before issue 10), 8 of 15 server stalls
  // over-admitted (up to 32 against 20), in all three kinds, and the frozen holder's run admitted
  // 28: 5 stalls of each kind (15 server stalls) miss such a regression with a probability of
  // about 0.47^15, below 1e-4. Two figures per kind: what the limiter admitted (a lease ends when it
  // is released or its signal aborts) must keep the limits; what work that ignored the signal did
  // is logged, for the record.
  const serverStalls = (Object.keys(stallKinds) as (keyof typeof stallKinds)[]).filter(
    (k) => !(holderFreezes as readonly string[]).includes(k),
  );
  it.each(serverStalls)(
    'through 5 stalls (%s), what the limiter admitted never exceeds the global and per-key limits',
    async (kind) => {
      const run = await stalled(server, kind, 5);
      const { global, perKey } = limitsHeld(kind, run);
      expect(global).toBeLessThanOrEqual(STALL.global);
      expect(perKey).toBeLessThanOrEqual(STALL.perKey);
      expect(global).toBe(STALL.global); // the limit was reached: the sweep had teeth
      expect(run.intervals.filter((i) => i.lost !== 0n).length).toBeGreaterThan(0); // the stalls did cost leases
    },
    90_000,
  );

  // A holder frozen past the TTL: Redis gives its slots away meanwhile, which no lease can
  // prevent (a frozen process cannot stop the work it started). What the limiter must do is abort
  // every lapsed lease first thing on resume, before the process is admitted anything or trusts a
  // reply that waited in its socket, so that nothing overlaps after the resume.
  it.each(holderFreezes)(
    `through ${FREEZES} freezes (%s), every lapsed lease aborts first thing on resume: no over-admission after it`,
    async (kind) => {
      const run = await stalled(server, kind, FREEZES);
      const { global, perKey } = limitsHeld(kind, run);
      expect(keptAcrossFreezes(run)).toEqual([]);
      expect(stepsAfterFreezes(run)).toEqual([]);
      expect(global).toBeLessThanOrEqual(STALL.global);
      expect(perKey).toBeLessThanOrEqual(STALL.perKey);
      expect(global).toBe(STALL.global);
      expect(run.freezes).toHaveLength(FREEZES);
      // Every lease a frozen process held lapsed in Redis meanwhile; each was reported lost (its
      // signal aborted, counted in counters.lost), none silently kept. A process may hold nothing at
      // the instant it freezes (a busy machine); most freezes must catch some leases, or the run had no teeth.
      const heldAcross = run.freezes.map((f) =>
        run.intervals.filter((i) => i.proc === f.proc && i.start < f.start && (i.end === 0n || i.end > f.start)),
      );
      expect(heldAcross.filter((held) => held.length > 0).length).toBeGreaterThanOrEqual(Math.ceil(FREEZES / 2));
      expect(heldAcross.flat().filter((i) => i.lost === 0n)).toEqual([]);
    },
    60_000 + FREEZES * 10_000,
  );

  it('control: without restart protection, the same sweep catches over-admission after the restart', async () => {
    const result = await run(server, false);
    const global = maxConcurrency(result.intervals, () => 'all').get('all')!;
    const perKey = Math.max(...maxConcurrency(result.intervals, (i) => i.key).values());
    expect(global > 50 || perKey > 5).toBe(true);
  }, 60_000);
});
