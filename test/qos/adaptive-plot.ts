// `npm run qos:adaptive:plot`: the picture of the adaptive limit in the README and docs/limits.md,
// as an SVG drawn from the knee simulation's 'capacity halves, then doubles' (knee-scenarios.ts):
// above, the default algorithm's limit following the backend's capacity, beside a port of
// Netflix's Vegas (netflix-vegas.ts) and three fixed limits; then the calls each serves per second,
// and the p99 latency of each second's calls. Plain SVG, no dependency; the same runs as the
// knee gates', so the picture is what the test checks.
import { writeFileSync } from 'node:fs';
import { DEFAULT_ADAPTIVE } from '../../lib/limits/adaptive/adaptive-limiter.js';
import { fixedGate } from './adaptive-backend.js';
import { adaptiveGate } from './adaptive-scenarios.js';
import { runKnee, type KneeRun } from './knee-backend.js';
import { KNEE_SCENARIOS } from './knee-scenarios.js';
import { netflixVegasGate } from './netflix-vegas.js';

const FIXED = [12, 24, 48];

/** The plot, as SVG text, and what it shows in numbers. */
export function adaptivePlot(): { svg: string; summary: string } {
  const scenario = KNEE_SCENARIOS.find((s) => s.name === 'capacity halves, then doubles')!;
  const endMs = scenario.phases.at(-1)!.untilMs;
  const L = scenario.serviceMs;
  const adaptive = runKnee(scenario, adaptiveGate(DEFAULT_ADAPTIVE, { wait: true }));
  const netflix = runKnee(scenario, netflixVegasGate({ wait: true }));
  const fixed = FIXED.map((limit) => ({ limit, run: runKnee(scenario, { ...fixedGate(limit), wait: true }) }));

  const W = 800;
  const left = 56;
  const right = 210;
  const plotW = W - left - right;
  const x = (ms: number) => left + (ms / endMs) * plotW;
  const colors = {
    adaptive: '#1b6ac9',
    netflix: '#b45309',
    capacity: '#222',
    fixed: ['#9ca3af', '#7c3aed', '#0f766e'],
  };
  const dashes = ['6 4', '2 3', '10 3 2 3'];

  /** Calls served in each second. */
  function perSecond(run: KneeRun): number[][] {
    const seconds = Array.from({ length: Math.ceil(endMs / 1_000) }, () => [] as number[]);
    for (const [t, ms] of run.served) seconds[Math.min(seconds.length - 1, Math.floor(t / 1_000))]!.push(ms);
    return seconds;
  }
  const p99 = (xs: number[]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(0.99 * sorted.length))]!;
  };

  function panel(
    top: number,
    height: number,
    yMax: number,
    yTicks: number[],
    yLabel: string,
    body: (y: (v: number) => number) => string,
  ): string {
    const y = (v: number) => top + height - (v / yMax) * height;
    const ticks = yTicks
      .map(
        (v) =>
          `<line x1="${left}" x2="${left + plotW}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/><text x="${left - 6}" y="${y(v) + 4}" text-anchor="end">${v}</text>`,
      )
      .join('');
    const label = `<text x="14" y="${top + height / 2}" transform="rotate(-90 14 ${top + height / 2})" text-anchor="middle">${yLabel}</text>`;
    return `${ticks}${label}<rect x="${left}" y="${top}" width="${plotW}" height="${height}" fill="none" stroke="#999"/>${body(y)}`;
  }

  const path = (points: [number, number][]) =>
    points.map(([px, py], i) => `${i === 0 ? 'M' : 'L'}${px.toFixed(1)},${py.toFixed(1)}`).join('');
  const legend = (top: number, entries: { text: string; color: string; dash?: string; width?: number }[]) =>
    entries
      .map((e, i) => {
        const ly = top + 14 + i * 18;
        return `<line x1="${left + plotW + 12}" x2="${left + plotW + 36}" y1="${ly}" y2="${ly}" stroke="${e.color}" stroke-width="${e.width ?? 2}"${e.dash ? ` stroke-dasharray="${e.dash}"` : ''}/><text x="${left + plotW + 40}" y="${ly + 4}">${e.text}</text>`;
      })
      .join('');

  // Above: the limits, and the backend's capacity (its knee).
  const capacity: [number, number][] = [];
  let from = 0;
  for (const p of scenario.phases) {
    capacity.push([from, p.capacity], [p.untilMs, p.capacity]);
    from = p.untilMs;
  }
  const goodput = (run: KneeRun) => (run.served.length / endMs) * 1_000;
  const runs = [
    ...fixed.map((f, i) => ({ text: `fixed ${f.limit}`, run: f.run, color: colors.fixed[i]!, dash: dashes[i] })),
    { text: 'Netflix-style vegas', run: netflix, color: colors.netflix, dash: undefined },
    { text: `adaptive (${DEFAULT_ADAPTIVE.algorithm})`, run: adaptive, color: colors.adaptive, dash: undefined },
  ];
  const line = (points: [number, number][], color: string, dash?: string) =>
    `<path d="${path(points)}" fill="none" stroke="${color}" stroke-width="${dash ? 1.5 : 2}"${dash ? ` stroke-dasharray="${dash}"` : ''}/>`;

  // Above: the limits, and the backend's capacity (its knee).
  const limits = panel(40, 170, 80, [0, 20, 40, 60, 80], 'limit (calls in flight)', (y) => {
    const cap = `<path d="${path(capacity.map(([t, v]) => [x(t), y(v)]))}" fill="none" stroke="${colors.capacity}" stroke-width="6" stroke-opacity="0.18"/>`;
    const fixedLines = fixed
      .map((f, i) =>
        line(
          [
            [x(0), y(f.limit)],
            [x(endMs), y(f.limit)],
          ],
          colors.fixed[i]!,
          dashes[i],
        ),
      )
      .join('');
    const trace = (run: KneeRun, color: string) =>
      line(
        run.trace.map(([t, l]) => [x(t), y(Math.min(l, 80))]),
        color,
      );
    return cap + fixedLines + trace(netflix, colors.netflix) + trace(adaptive, colors.adaptive);
  });
  const legendTop = legend(40, [
    { text: 'backend capacity', color: colors.capacity, width: 6 },
    ...runs.map((r) => ({ text: r.text, color: r.color, dash: r.dash })).reverse(),
  ]);

  // Then: calls served per second.
  const served = panel(240, 120, 1_500, [0, 500, 1_000, 1_500], 'calls served / s', (y) =>
    runs
      .map((r) =>
        line(
          perSecond(r.run).map((ms, s) => [x(s * 1_000 + 500), y(ms.length)]),
          r.color,
          r.dash,
        ),
      )
      .join(''),
  );
  const legendMiddle = `<text x="${left + plotW + 12}" y="${250}">served over the run</text>${legend(
    250,
    runs.map((r) => ({ text: `${r.text}: ${goodput(r.run).toFixed(0)}/s`, color: r.color, dash: r.dash })).reverse(),
  )}`;

  // Below: the p99 latency of each second's calls, in service times; 2 L is the line the gates hold.
  const latency = panel(390, 120, 4, [0, 1, 2, 3, 4], 'p99 latency / L', (y) => {
    const bound = `<line x1="${x(0)}" x2="${x(endMs)}" y1="${y(2)}" y2="${y(2)}" stroke="#dc2626" stroke-width="1" stroke-opacity="0.6"/>`;
    return (
      bound +
      runs
        .map((r) =>
          line(
            perSecond(r.run).map((ms, s) => [x(s * 1_000 + 500), y(Math.min(4, p99(ms) / L))]),
            r.color,
            r.dash,
          ),
        )
        .join('')
    );
  });
  const worst = (run: KneeRun) => Math.max(...perSecond(run).map((ms) => p99(ms))) / L;
  const legendBottom = `<text x="${left + plotW + 12}" y="${400}">worst second's p99</text>${legend(
    400,
    runs.map((r) => ({ text: `${r.text}: ${worst(r.run).toFixed(1)} L`, color: r.color, dash: r.dash })).reverse(),
  )}`;

  const seconds = [0, 10, 20, 30, 40, 50, 60]
    .map((s) => `<text x="${x(s * 1_000)}" y="528" text-anchor="middle">${s}</text>`)
    .join('');
  const title = `<text x="${left}" y="22" font-size="14" font-weight="600">The backend’s capacity halves, then doubles, under twice its load (simulation, L = ${L} ms)</text>`;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="550" viewBox="0 0 ${W} 550" font-family="system-ui, sans-serif" font-size="12" fill="#222">
<rect width="100%" height="100%" fill="#fff"/>
${title}${limits}${legendTop}${served}${legendMiddle}${latency}${legendBottom}${seconds}<text x="${left + plotW / 2}" y="545" text-anchor="middle">seconds</text>
</svg>
`;
  return {
    svg,
    summary: runs
      .map((r) => `${r.text} ${goodput(r.run).toFixed(0)} calls/s, worst p99 ${worst(r.run).toFixed(2)} L`)
      .join('; '),
  };
}

if (process.argv[1]?.endsWith('adaptive-plot.js')) {
  const out = process.argv[2] ?? 'docs/adaptive-limit.svg';
  const { svg, summary } = adaptivePlot();
  writeFileSync(out, svg);
  console.log(`wrote ${out}: ${summary}`);
}
