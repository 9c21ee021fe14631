// `npm run qos:adaptive:plot`: the README's picture of the adaptive limit, as an SVG drawn from
// the simulation ('capacity halves, then recovers'): above, the default algorithm's limit
// following the backend's capacity, next to three fixed limits; below, the calls each serves
// per second. Plain SVG, no dependency; the same run as the gate's, so the picture is what the
// test checks.
import { writeFileSync } from 'node:fs';
import { DEFAULT_ADAPTIVE } from '../../lib/limits/adaptive/adaptive-limiter.js';
import { fixedGate, runAdaptive, type AdaptiveRun } from './adaptive-backend.js';
import { ADAPTIVE_SCENARIOS, adaptiveGate } from './adaptive-scenarios.js';

/** The plot, as SVG text, and what it shows in numbers. */
export function adaptivePlot(): { svg: string; summary: string } {
  const scenario = ADAPTIVE_SCENARIOS[0]!;
  const endMs = scenario.phases.at(-1)!.untilMs;
  const adaptive = runAdaptive(scenario, adaptiveGate(DEFAULT_ADAPTIVE));
  const fixed = [20, 40, 80].map((limit) => ({ limit, run: runAdaptive(scenario, fixedGate(limit)) }));

  const W = 760;
  const left = 56;
  const right = 150;
  const plotW = W - left - right;
  const x = (ms: number) => left + (ms / endMs) * plotW;
  const colors = { adaptive: '#1b6ac9', capacity: '#222', fixed: ['#c2410c', '#7c3aed', '#0f766e'] };
  const dashes = ['6 4', '2 3', '10 3 2 3'];

  /** Calls served in each second. */
  function perSecond(run: AdaptiveRun): number[] {
    const counts = new Array<number>(Math.ceil(endMs / 1_000)).fill(0);
    for (const t of run.served) counts[Math.min(counts.length - 1, Math.floor(t / 1_000))]!++;
    return counts;
  }

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
  const limits = panel(40, 200, 90, [0, 20, 40, 60, 80], 'calls in flight', (y) => {
    const cap = `<path d="${path(capacity.map(([t, v]) => [x(t), y(v)]))}" fill="none" stroke="${colors.capacity}" stroke-width="6" stroke-opacity="0.18"/>`;
    const fixedLines = fixed
      .map(
        (f, i) =>
          `<line x1="${x(0)}" x2="${x(endMs)}" y1="${y(f.limit)}" y2="${y(f.limit)}" stroke="${colors.fixed[i]}" stroke-width="1.5" stroke-dasharray="${dashes[i]}"/>`,
      )
      .join('');
    const trace = `<path d="${path(adaptive.trace.map(([t, l]) => [x(t), y(Math.min(l, 90))]))}" fill="none" stroke="${colors.adaptive}" stroke-width="2"/>`;
    return cap + fixedLines + trace;
  });
  const legendTop = legend(40, [
    { text: 'backend capacity', color: colors.capacity, width: 6 },
    { text: `adaptive (${DEFAULT_ADAPTIVE.algorithm})`, color: colors.adaptive },
    ...fixed.map((f, i) => ({ text: `fixed ${f.limit}`, color: colors.fixed[i]!, dash: dashes[i] })),
  ]);

  // Below: calls served per second.
  const served = panel(290, 170, 2_000, [0, 500, 1_000, 1_500, 2_000], 'calls served / s', (y) => {
    const line = (run: AdaptiveRun, color: string, dash?: string) =>
      `<path d="${path(perSecond(run).map((n, s) => [x(s * 1_000 + 500), y(n)]))}" fill="none" stroke="${color}" stroke-width="${dash ? 1.5 : 2}"${dash ? ` stroke-dasharray="${dash}"` : ''}/>`;
    return fixed.map((f, i) => line(f.run, colors.fixed[i]!, dashes[i])).join('') + line(adaptive, colors.adaptive);
  });
  const totals = [
    { text: `adaptive: ${adaptive.goodput.toFixed(0)}/s`, color: colors.adaptive },
    ...fixed.map((f, i) => ({
      text: `fixed ${f.limit}: ${f.run.goodput.toFixed(0)}/s`,
      color: colors.fixed[i]!,
      dash: dashes[i],
    })),
  ];
  const legendBottom = `<text x="${left + plotW + 12}" y="${300}">over the run</text>${legend(300, totals)}`;

  const seconds = [0, 15, 30, 45, 60, 75, 90]
    .map((s) => `<text x="${x(s * 1_000)}" y="478" text-anchor="middle">${s}</text>`)
    .join('');
  const title = `<text x="${left}" y="22" font-size="14" font-weight="600">The limit follows the backend’s capacity as it halves and returns (simulation)</text>`;
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="500" viewBox="0 0 ${W} 500" font-family="system-ui, sans-serif" font-size="12" fill="#222">
<rect width="100%" height="100%" fill="#fff"/>
${title}${limits}${legendTop}${served}${legendBottom}${seconds}<text x="${left + plotW / 2}" y="495" text-anchor="middle">seconds</text>
</svg>
`;
  return {
    svg,
    summary: `adaptive ${adaptive.goodput.toFixed(0)} calls/s over the run; ${fixed.map((f) => `fixed ${f.limit} ${f.run.goodput.toFixed(0)}`).join(', ')}`,
  };
}

if (process.argv[1]?.endsWith('adaptive-plot.js')) {
  const out = process.argv[2] ?? 'docs/adaptive-limit.svg';
  const { svg, summary } = adaptivePlot();
  writeFileSync(out, svg);
  console.log(`wrote ${out}: ${summary}`);
}
