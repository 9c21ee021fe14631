// What `npm run qos` shows: a text table per scenario, and an HTML report with, for each
// contender, acquire waits over time and the connections each member held.
import type { RunResult } from './harness.js';
import { endOf, membersOf, type Scenario } from './scenario.js';
import { percentile, score } from './scoring.js';

const fixed = (v: number) => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2));

/** The scenario's table: each measure's value and score per contender, the weights, the totals. */
export function table(scenario: Scenario, runs: readonly RunResult[]): string {
  const scores = runs.map((r) => score(r));
  const head = ['measure', 'weight', ...runs.map((r) => `${r.contender} value → score`)];
  const rows = scenario.measures.map((_, i) => [
    scores[0]!.measures[i]!.label,
    String(scores[0]!.measures[i]!.weight),
    ...scores.map((s) => `${fixed(s.measures[i]!.value)} → ${s.measures[i]!.score.toFixed(0)}`),
  ]);
  rows.push(['weighted total', '', ...scores.map((s) => s.total.toFixed(1))]);
  const widths = head.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c]!.length)));
  const line = (cells: readonly string[]) =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  const pass = scores[0]!.total >= scenario.threshold && scores.slice(1).every((s) => scores[0]!.total > s.total);
  return [
    `### ${scenario.name}: ${pass ? 'pass' : 'FAIL'} (threshold ${scenario.threshold})`,
    scenario.about,
    '',
    line(head),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map(line),
  ].join('\n');
}

const PALETTE = [
  '#1f77b4',
  '#ff7f0e',
  '#2ca02c',
  '#d62728',
  '#9467bd',
  '#8c564b',
  '#e377c2',
  '#7f7f7f',
  '#bcbd22',
  '#17becf',
];
const colour = (i: number) => PALETTE[i % PALETTE.length]!;
const W = 360;
const H = 150;
const PAD = 34;
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** A plot's frame: room above for its label, below for the time axis. */
const svg = (body: string) =>
  `<svg width="${W + 10}" height="${H + 30}" font-size="9" font-family="sans-serif"><g transform="translate(0,14)">${body}</g></svg>`;

function axes(xMax: number, yLabel: string, yTicks: readonly [number, string][]): string {
  const ticks = yTicks
    .map(
      ([y, t]) =>
        `<line x1="${PAD}" x2="${W}" y1="${y}" y2="${y}" stroke="#eee"/><text x="${PAD - 4}" y="${y + 3}" text-anchor="end">${t}</text>`,
    )
    .join('');
  const secs = Math.ceil(xMax / 1000);
  const step = secs > 10 ? 5 : 2;
  let xTicks = '';
  for (let s = 0; s <= secs; s += step)
    xTicks += `<text x="${PAD + (s * 1000 * (W - PAD)) / xMax}" y="${H + 12}" text-anchor="middle">${s}s</text>`;
  return `${ticks}<line x1="${PAD}" x2="${PAD}" y1="0" y2="${H}" stroke="#999"/><line x1="${PAD}" x2="${W}" y1="${H}" y2="${H}" stroke="#999"/>${xTicks}<text x="2" y="-4">${yLabel}</text>`;
}

/** p90 wait per member in 250 ms windows, on a log scale from 0.1 ms to 10 s. */
function waitPlot(run: RunResult, members: readonly string[]): string {
  const end = endOf(run.scenario);
  const x = (t: number) => PAD + (t * (W - PAD)) / end;
  const y = (ms: number) => H - (Math.log10(Math.min(Math.max(ms, 0.1), 10_000)) + 1) * (H / 5);
  const lines = members.map((m, i) => {
    // A window with no query of the member breaks its line: a quiet gap is not a wait.
    let d = '';
    let moved = false;
    for (let t = 0; t < end; t += 250) {
      const waits = run.queries.filter((q) => q.member === m && q.at >= t && q.at < t + 250).map((q) => q.waitMs);
      if (waits.length === 0) {
        moved = false;
        continue;
      }
      d += `${moved ? 'L' : 'M'}${x(t + 125).toFixed(1)},${y(percentile(waits, 90)).toFixed(1)}`;
      moved = true;
    }
    return d === '' ? '' : `<path fill="none" stroke="${colour(i)}" stroke-width="1.2" d="${d}"/>`;
  });
  const ticks: [number, string][] = [0.1, 1, 10, 100, 1000, 10000].map((v) => [
    y(v),
    v >= 1000 ? `${v / 1000}s` : `${v}`,
  ]);
  return svg(`${axes(end, 'p90 wait (ms)', ticks)}${lines.join('')}`);
}

/** Connections per member, stacked, against maxTotal. */
function connectionPlot(run: RunResult, members: readonly string[]): string {
  const end = endOf(run.scenario);
  const max = run.scenario.maxTotal;
  const x = (t: number) => PAD + (t * (W - PAD)) / end;
  const y = (n: number) => H - (n * H) / (max * 1.1);
  const below = run.samples.map(() => 0);
  const areas = members.map((m, i) => {
    const top = run.samples.map((s, j) => below[j]! + (s.connections[m] ?? 0));
    const path = [
      ...run.samples.map((s, j) => `${x(s.at).toFixed(1)},${y(top[j]!).toFixed(1)}`),
      ...run.samples.map((s, j) => `${x(s.at).toFixed(1)},${y(below[j]!).toFixed(1)}`).reverse(),
    ];
    top.forEach((v, j) => (below[j] = v));
    return `<polygon fill="${colour(i)}" fill-opacity="0.75" stroke="none" points="${path.join(' ')}"/>`;
  });
  const ticks: [number, string][] = [0, Math.round(max / 2), max].map((v) => [y(v), String(v)]);
  const cap = `<line x1="${PAD}" x2="${W}" y1="${y(max)}" y2="${y(max)}" stroke="#d00" stroke-dasharray="4 3"/>`;
  return svg(`${axes(end, 'connections', ticks)}${areas.join('')}${cap}`);
}

/** The whole report: per scenario, its table, then each contender's two plots. */
export function html(results: readonly (readonly RunResult[])[]): string {
  const sections = results.map((runs) => {
    const scenario = runs[0]!.scenario;
    const members = membersOf(scenario);
    const legend =
      members.length <= 10
        ? members.map((m, i) => `<span style="color:${colour(i)}">■ ${esc(m)}</span>`).join(' ')
        : `${members.length} members (colours repeat)`;
    const plots = runs
      .map(
        (r) =>
          `<div class="run"><h3>${r.contender}: ${score(r).total.toFixed(1)}</h3>${waitPlot(r, members)}<br>${connectionPlot(r, members)}</div>`,
      )
      .join('');
    return `<section><h2>${esc(scenario.name)}</h2><p>${esc(scenario.about)}. Budget ${scenario.maxTotal}, connect ${scenario.connect.mean} ms.</p><pre>${esc(table(scenario, runs).split('\n').slice(3).join('\n'))}</pre><p class="legend">${legend}</p><div class="runs">${plots}</div></section>`;
  });
  return `<!doctype html><html><head><meta charset="utf-8"><title>Pool group QoS</title><style>
body{font-family:sans-serif;margin:16px;color:#222}section{border-top:1px solid #ccc;padding-top:4px}
.runs{display:flex;flex-wrap:wrap;gap:12px}.run h3{margin:4px 0;font-size:13px}pre{font-size:11px;background:#f6f6f6;padding:6px;overflow-x:auto}
.legend{font-size:12px}</style></head><body><h1>Pool group QoS simulation</h1>
<p>Each scenario runs on virtual time against the pool group and two naive baselines: <b>static</b> (the budget split evenly between members, at least one each) and <b>greedy</b> (first come, first served, idle connections closed after 1 s). Top: p90 acquire wait per member over 250 ms windows (log scale). Bottom: connections per member, stacked; the dashed line is maxTotal.</p>
${sections.join('\n')}</body></html>`;
}
