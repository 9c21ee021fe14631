/**
 * The dashboard at scale: an app with a 10,000-member pool group under load (its own process,
 * `dashboard-scale-server.ts`), first with no page open, then with 500 stream clients of which
 * half never read. The app measures its event loop's delay and its memory (what is reachable
 * after a full GC, heap and buffers; and its RSS) in each phase; then
 * times snapshots built from scratch. Targets (issue 46): p99 delay within 20 ms of the phase
 * without viewers, memory growth under 30 MB over the 20 s, a snapshot built in under 10 ms.
 */
import { fork } from 'node:child_process';
import { request, type ClientRequest } from 'node:http';
import type { Ask, BuildFigures, PhaseFigures } from './dashboard-scale-server.js';

export interface DashboardScaleResult {
  readonly members: number;
  readonly viewers: number;
  readonly phaseMs: number;
  readonly without: PhaseFigures;
  readonly with: PhaseFigures;
  readonly build: BuildFigures;
}

const VIEWERS = Number(process.env.BENCH_DASHBOARD_VIEWERS ?? 500);
const PHASE_MS = 20_000;

/** Opens `n` streams of `url`; every other one never reads what it is sent. */
function openViewers(url: string, n: number): Promise<ClientRequest[]> {
  return Promise.all(
    Array.from(
      { length: n },
      (_, i) =>
        new Promise<ClientRequest>((resolve, reject) => {
          const req = request(
            `${url}/pools/ui/stream`,
            { agent: false, headers: { accept: 'text/event-stream' } },
            (res) => {
              if (i % 2 === 0) res.resume();
              else res.pause(); // reads nothing: its socket fills, then the server's buffer for it would
              resolve(req);
            },
          );
          req.on('error', reject);
          req.end();
        }),
    ),
  );
}

export async function dashboardScaleBench(): Promise<DashboardScaleResult> {
  const child = fork(new URL('./dashboard-scale-server.js', import.meta.url), [], {
    execArgv: ['--expose-gc'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const next = <T>() =>
    new Promise<T>((resolve, reject) => {
      child.once('message', (m) => resolve(m as T));
      child.once('exit', (code) => reject(new Error(`the app exited (${code})`)));
    });
  const ask = <T>(what: Ask) => {
    const answer = next<T>();
    child.send(what);
    return answer;
  };
  try {
    const { url } = await next<{ url: string }>();
    const without = await ask<PhaseFigures>({ measure: PHASE_MS });
    const viewers = await openViewers(url, VIEWERS);
    const withViewers = await ask<PhaseFigures>({ measure: PHASE_MS });
    for (const v of viewers) v.destroy();
    const build = await ask<BuildFigures>({ build: 20 });
    return { members: build.members, viewers: VIEWERS, phaseMs: PHASE_MS, without, with: withViewers, build };
  } finally {
    child.disconnect();
  }
}
