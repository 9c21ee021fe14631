import { groupReleaseMicros } from '../group-scale.js';
import { dashboardLoadBench } from '../dashboard-load.js';
import { dashboardScaleBench } from '../dashboard-scale.js';

/** A pool group's release with the budget spent, as the number of members grows: flat, not O(n log n). */
export async function groupScaleBench(results: Record<string, unknown>, rows: string[][]): Promise<void> {
  const micros: Record<string, number> = {};
  for (const members of [200, 1_000, 10_000]) micros[members] = await groupReleaseMicros(members);
  results.groupScale = micros;
  for (const [members, us] of Object.entries(micros)) {
    rows.push([
      `pool group, 100 places spent, ${Number(members).toLocaleString('en')} members`,
      'time per release (every other member waits)',
      `${us.toFixed(1)} µs`,
      'target: flat in the members (O(log n))',
    ]);
  }
}

/** The sample app's requests served with 10 dashboard pages open / none. */
export async function dashboardBench(results: Record<string, unknown>, rows: string[][]): Promise<void> {
  const d = await dashboardLoadBench();
  results.dashboard = d;
  const rps = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(', ');
  rows.push([
    `sample app GET /upstream/:item, ${d.clients} clients`,
    `requests/s with ${d.pages} dashboard pages open / none (median of ${d.open.length} alternating phases)`,
    `${d.ratio.toFixed(3)}×`,
    `target ≥ 0.98×; open ${rps(d.open)}; none ${rps(d.closed)}`,
  ]);
  rows.push([
    '  control: none / none',
    'the same, with no page open in either phase',
    `${d.controlRatio.toFixed(3)}×`,
    `the noise of two identical phases; ${rps(d.control)}`,
  ]);
  rows.push([
    '  the same phases',
    `the app's CPU per request: none / ${d.pages} pages open`,
    `${d.cpuRatio.toFixed(3)}×`,
    `µs open ${rps(d.openCpuUs)}; none ${rps(d.closedCpuUs)}`,
  ]);
  rows.push([
    '  the same phases',
    `the dashboard's own time with ${d.pages} pages open (building and writing snapshots)`,
    `${d.busyMsPerSec.toFixed(2)} ms/s`,
    `${((d.busyMsPerSec / 1000) * 100).toFixed(2)} % of a core`,
  ]);
}

/** A 10,000-member group's app with 500 stream clients (half never reading) against none. */
export async function dashboardScale(results: Record<string, unknown>, rows: string[][]): Promise<void> {
  const d = await dashboardScaleBench();
  results.dashboardScale = d;
  const at = `${d.members.toLocaleString('en')}-member group, ${d.viewers} streams (half never reading)`;
  const ms = (x: number) => `${x.toFixed(1)} ms`;
  rows.push([
    at,
    "event loop delay p99: with streams / without (the app's own monitor)",
    `${ms(d.with.p99Ms)} / ${ms(d.without.p99Ms)}`,
    `target within 20 ms: +${ms(d.with.p99Ms - d.without.p99Ms)}; max ${ms(d.with.maxMs)} / ${ms(d.without.maxMs)}`,
  ]);
  rows.push([
    '  the same phases',
    `memory growth over ${d.phaseMs / 1000} s: with streams / without (reachable after a GC, heap and buffers)`,
    `${d.with.liveGrowthMB} / ${d.without.liveGrowthMB} MB`,
    `target < 30 MB; RSS ${d.with.rssGrowthMB} / ${d.without.rssGrowthMB} MB; written, not yet taken by viewers at the end ${d.with.bufferedKB} KB`,
  ]);
  rows.push([
    '  the same phases',
    "the dashboard's own time with the streams open (building and writing)",
    `${(d.with.busyMs / (d.phaseMs / 1000)).toFixed(1)} ms/s`,
    `${d.with.built} snapshots, ${(d.with.busyMs / Math.max(d.with.built, 1)).toFixed(1)} ms each`,
  ]);
  rows.push([
    '  a snapshot built from scratch',
    `median / longest of 20, ${d.build.memberRows} member rows`,
    `${ms(d.build.medianMs)} / ${ms(d.build.maxMs)}`,
    `target < 10 ms; ${(d.build.bytes / 1024).toFixed(0)} KB`,
  ]);
}
