/**
 * The dashboard's cost to the app it watches: the sample app (`npm start`, in a process of its
 * own) serves GET /upstream/:item to 50 keep-alive clients, with no dashboard page open and with
 * 10 pages streaming it, in alternating phases, and a third phase with no page open again as a
 * control (two identical phases differ by this much on this machine). The ratio of requests
 * served is the row; the dashboard's own time (building and writing snapshots) bounds its cost.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { get, Agent, type IncomingMessage } from 'node:http';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface DashboardLoadResult {
  /** Requests per second in each phase, in order. */
  readonly closed: number[];
  readonly open: number[];
  /** Median with 10 pages open over median with none. */
  readonly ratio: number;
  /** Control phases, also with no page open: the ratio two identical phases give (the noise). */
  readonly control: number[];
  readonly controlRatio: number;
  /** The app process's CPU time per request served, µs, in each phase. */
  readonly closedCpuUs: number[];
  readonly openCpuUs: number[];
  /** Median CPU per request with no page open over the median with pages open: the throughput the CPU allows. */
  readonly cpuRatio: number;
  /** The dashboard's own time (building and writing snapshots) per second with the pages open, ms: its share of a core. */
  readonly busyMsPerSec: number;
  readonly pages: number;
  readonly clients: number;
  readonly phaseMs: number;
}

const CLIENTS = 50;
const PAGES = Number(process.env.BENCH_DASHBOARD_PAGES ?? 10);
const PHASE_MS = 2_000;
const ROUNDS = 10;

/** CPU time (user + system) the process `pid` used so far, µs (Linux: /proc; 10 ms resolution). */
function cpuOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000; // utime, stime in ticks of 10 ms
}

/** Starts the sample app on a free port; its URL once it listens. */
function startSample(): Promise<{ child: ChildProcess; url: string }> {
  const script = fileURLToPath(new URL('../../scripts/run-sample.mjs', import.meta.url));
  // The embedded services only (Azurite, the HTTP/2 upstream): no Redis or PostgreSQL pool.
  const env = { ...process.env };
  delete env.REDIS_URL;
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, [script, 'main'], {
    env: { ...env, PORT: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const url = /sample app on (http:\/\/\S+)/.exec(out)?.[1];
      if (url !== undefined) resolve({ child, url });
    });
    child.once('exit', (code) => reject(new Error(`the sample app exited (${code}) before it listened:\n${out}`)));
  });
}

/** Requests served by `CLIENTS` keep-alive loops over `ms`. */
async function serve(url: string, agent: Agent, ms: number): Promise<number> {
  const end = Date.now() + ms;
  let served = 0;
  const client = async (c: number) => {
    for (let i = 0; Date.now() < end; i++) {
      const status = await new Promise<number>((resolve, reject) => {
        get(`${url}/upstream/${i % 100}`, { agent, headers: { 'x-user-id': `user-${c}` } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode!));
        }).on('error', reject);
      });
      if (status === 200) served++;
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
  return (served / ms) * 1_000;
}

/** Opens `n` dashboard streams that read (and drop) every event, as open pages do. */
function openPages(url: string, n: number): Promise<IncomingMessage[]> {
  return Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<IncomingMessage>((resolve, reject) => {
          get(`${url}/pools/ui/stream`, { headers: { accept: 'text/event-stream' } }, (res) => {
            res.on('data', () => {});
            resolve(res);
          }).on('error', reject);
        }),
    ),
  );
}

/** The dashboard's own time so far, ms, as its snapshot tells it. */
async function busy(url: string): Promise<number> {
  return ((await (await fetch(`${url}/pools/ui/snapshot`)).json()) as { busyMs: number }).busyMs;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function dashboardLoadBench(): Promise<DashboardLoadResult> {
  const { child, url } = await startSample();
  const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
  try {
    await serve(url, agent, 1_500); // warm-up: sessions open, JIT settles
    const closed: number[] = [];
    const open: number[] = [];
    const control: number[] = [];
    const closedCpuUs: number[] = [];
    const openCpuUs: number[] = [];
    const phase = async (rates: number[], cpus: number[]) => {
      const cpu = cpuOf(child.pid!);
      const rate = await serve(url, agent, PHASE_MS);
      rates.push(rate);
      cpus.push((cpuOf(child.pid!) - cpu) / ((rate * PHASE_MS) / 1_000));
    };
    let busyMs = 0;
    let openMs = 0;
    for (let round = 0; round < ROUNDS; round++) {
      await phase(closed, closedCpuUs);
      const pages = await openPages(url, PAGES);
      const [before, began] = [await busy(url), Date.now()];
      await phase(open, openCpuUs);
      busyMs += (await busy(url)) - before;
      openMs += Date.now() - began;
      for (const page of pages) page.destroy();
      await phase(control, []);
    }
    return {
      closed,
      open,
      ratio: median(open) / median(closed),
      control,
      controlRatio: median(control) / median(closed),
      closedCpuUs,
      openCpuUs,
      cpuRatio: median(closedCpuUs) / median(openCpuUs),
      busyMsPerSec: (busyMs / openMs) * 1_000,
      pages: PAGES,
      clients: CLIENTS,
      phaseMs: PHASE_MS,
    };
  } finally {
    agent.destroy();
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
}
