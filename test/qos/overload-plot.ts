// `npm run qos:knee:plot`: the picture of controlled waiting in docs/limits.md, as an SVG drawn
// from the knee simulation's 'twice the capacity, callers with a 1 s deadline'
// (knee-scenarios.ts): the latency each second's served callers saw, their wait at the gate
// included, and the calls served per second, for a limit of the backend's capacity that refuses
// at once, one whose callers wait in a plain FIFO queue to their deadline (what pools do), one
// with controlled waiting (the library's choice), the default adaptive limit, and a port of
// Netflix's Vegas, which refuses at once. The same runs as the knee gates', so the picture is
// what the test checks.
import { writeFileSync } from 'node:fs';
import { DEFAULT_ADAPTIVE } from '../../lib/limits/adaptive/adaptive-limiter.js';
import { fixedGate } from './adaptive-backend.js';
import { adaptiveGate } from './adaptive-scenarios.js';
import { runKnee, type KneeRun, type KneeStretch } from './knee-backend.js';
import { KNEE_SCENARIOS } from './knee-scenarios.js';
import { netflixVegasGate } from './netflix-vegas.js';

const SCENARIO = 'twice the capacity, callers with a 1 s deadline';

interface Series {
  readonly text: string;
  readonly color: string;
  readonly dash?: string;
  readonly run: KneeRun;
}

/** The runs the picture shows, one per gate, counted per second. */
export function overloadRuns(): { series: Series[]; serviceMs: number; endMs: number; capacity: number } {
  const base = KNEE_SCENARIOS.find((s) => s.name === SCENARIO)!;
  const scenario = { ...base, bucketMs: 1_000 };
  const C = base.phases[0]!.capacity;
  const controlled = { mode: 'controlled' } as const;
  const series: Series[] = [
    {
      text: `fixed ${C}, FIFO to the deadline`,
      color: '#dc2626',
      run: runKnee(scenario, { ...fixedGate(C), wait: true }),
    },
    { text: `fixed ${C}, refused at once`, color: '#9ca3af', dash: '6 4', run: runKnee(scenario, fixedGate(C)) },
    {
      text: `Netflix-style vegas, refused at once`,
      color: '#b45309',
      dash: '2 3',
      run: runKnee(scenario, netflixVegasGate()),
    },
    {
      text: `fixed ${C}, controlled waiting`,
      color: '#0f766e',
      run: runKnee(scenario, { ...fixedGate(C), wait: true, waiting: controlled }),
    },
    {
      text: `adaptive (${DEFAULT_ADAPTIVE.algorithm}), controlled`,
      color: '#1b6ac9',
      run: runKnee(scenario, adaptiveGate(DEFAULT_ADAPTIVE, { wait: true, waiting: controlled })),
    },
  ];
  return { series, serviceMs: base.serviceMs, endMs: base.phases.at(-1)!.untilMs, capacity: C };
}

/** Seconds the figures leave out: the start, when a queue may form before it counts as standing. */
export const SETTLE_MS = 5_000;

/**
 * Over the run after {@link SETTLE_MS}: the worst second's p99 and the median second's p50 (ms),
 * calls served / s, refused share.
 */
export function figures(run: KneeRun): { p99: number; p50: number; goodput: number; refused: number } {
  const settled = run.buckets.filter((b) => b.fromMs >= SETTLE_MS);
  const p50s = settled.map((b) => b.callerP50).sort((a, b) => a - b);
  const arrived = settled.reduce((n, b) => n + b.arrived, 0);
  return {
    p99: Math.max(...settled.map((b) => b.callerP99)),
    p50: p50s[Math.floor(p50s.length / 2)]!,
    goodput: settled.reduce((n, b) => n + b.goodput, 0) / settled.length,
    refused: settled.reduce((n, b) => n + b.refused + b.shed, 0) / Math.max(1, arrived),
  };
}

/** The plot, as SVG text, and what it shows in numbers. */
export function overloadPlot(runs = overloadRuns()): { svg: string; summary: string } {
  const { series, serviceMs: L, endMs, capacity: C } = runs;
  const [W, left, right] = [900, 56, 330];
  const plotW = W - left - right;
  const x = (ms: number) => left + (ms / endMs) * plotW;
  const mid = (b: KneeStretch) => x((b.fromMs + b.untilMs) / 2);

  const panel = (
    top: number,
    height: number,
    max: number,
    ticks: number[],
    label: string,
    value: (b: KneeStretch) => number,
  ) => {
    const y = (v: number) => top + height - (Math.min(v, max) / max) * height;
    const grid = ticks
      .map(
        (v) =>
          `<line x1="${left}" x2="${left + plotW}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/><text x="${left - 6}" y="${y(v) + 4}" text-anchor="end">${v}</text>`,
      )
      .join('');
    const lines = series
      .map((s) => {
        const d = s.run.buckets.map((b, i) => `${i === 0 ? 'M' : 'L'}${mid(b).toFixed(1)},${y(value(b)).toFixed(1)}`);
        return `<path d="${d.join('')}" fill="none" stroke="${s.color}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/>`;
      })
      .join('');
    const axis = `<text x="14" y="${top + height / 2}" transform="rotate(-90 14 ${top + height / 2})" text-anchor="middle">${label}</text>`;
    return `${grid}${axis}<rect x="${left}" y="${top}" width="${plotW}" height="${height}" fill="none" stroke="#999"/>${lines}`;
  };

  const latency = panel(40, 200, 1_100, [0, 250, 500, 750, 1_000], "served callers' p99, ms", (b) => b.callerP99);
  const served = panel(280, 150, 1_500, [0, 500, 1_000, 1_500], 'calls served / s', (b) => b.goodput);
  const legend = series
    .map((s, i) => {
      const f = figures(s.run);
      const ly = 60 + i * 56;
      const lx = left + plotW + 14;
      return `<line x1="${lx}" x2="${lx + 24}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/><text x="${lx + 30}" y="${ly + 4}">${s.text}</text><text x="${lx + 30}" y="${ly + 19}" fill="#555">p50 ${f.p50.toFixed(0)} ms, p99 ${f.p99.toFixed(0)} ms (${(f.p99 / L).toFixed(1)} L)</text><text x="${lx + 30}" y="${ly + 33}" fill="#555">${f.goodput.toFixed(0)} served / s, ${(f.refused * 100).toFixed(0)} % refused</text>`;
    })
    .join('');
  const legendHead = `<text x="${left + plotW + 14}" y="40" fill="#555">after ${SETTLE_MS / 1_000} s: median second's p50, worst second's p99</text>`;
  const seconds = [0, 10, 20, 30, 40, 50, 60]
    .map((s) => `<text x="${x(s * 1_000)}" y="448" text-anchor="middle">${s}</text>`)
    .join('');
  const title = `<text x="${left}" y="22" font-size="14" font-weight="600">Twice the capacity, callers with a 1 s deadline (simulation: ${C} calls at once, L = ${L} ms, ${((C / L) * 1_000).toFixed(0)} calls / s)</text>`;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="470" viewBox="0 0 ${W} 470" font-family="system-ui, sans-serif" font-size="12" fill="#222">
<rect width="100%" height="100%" fill="#fff"/>
${title}${latency}${served}${legendHead}${legend}${seconds}<text x="${left + plotW / 2}" y="464" text-anchor="middle">seconds</text>
</svg>
`;
  const summary = series
    .map((s) => {
      const f = figures(s.run);
      return `${s.text}: p99 ${(f.p99 / L).toFixed(2)} L, ${f.goodput.toFixed(0)}/s, refused ${(f.refused * 100).toFixed(1)} %`;
    })
    .join('; ');
  return { svg, summary };
}

if (process.argv[1]?.endsWith('overload-plot.js')) {
  const out = process.argv[2] ?? 'docs/overload-waiting.svg';
  const { svg, summary } = overloadPlot();
  writeFileSync(out, svg);
  console.log(`wrote ${out}: ${summary}`);
}
