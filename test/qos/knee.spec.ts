// The adaptive limits on a backend with a hard knee (knee-backend.ts), every algorithm with its
// defaults and callers waiting for the limit as an AdaptiveLimiter's do by default (controlled
// waiting: a standing queue shed), on every
// scenario of knee-scenarios.ts: at twice the capacity for 30 minutes of virtual time the
// capacity served, p99 within twice the service time, and no ratchet (neither the limit nor the
// latency trending up); a cold start of 50 clients and half load refusing almost nothing; after a
// capacity halving p99 back within 2 L in a second, after a doubling the limit at 0.8 of the new
// capacity within 2 s; callers with a 1 s deadline at twice the capacity served within 3 L as
// they measure it, the wait included, and a burst after a calm absorbed. The half-hour runs go to
// processes of their own (knee-verdict.ts).
// `npm run qos:knee` prints them all, with and without waiting.
import { beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DEFAULT_ADAPTIVE } from '../../lib/limits/adaptive/adaptive-limiter.js';
import { fixedGate } from './adaptive-backend.js';
import { adaptiveGate } from './adaptive-scenarios.js';
import { runKnee } from './knee-backend.js';
import { KNEE_ALGORITHMS, KNEE_SCENARIOS, type Verdict } from './knee-scenarios.js';
import { compile, root } from '../support/compile.js';

const dist = join(root, 'dist-test-knee');
const SUSTAINED = 'sustained 2x overload, 30 minutes';
/** An adaptive limiter's default waiting. */
const CONTROLLED = { mode: 'controlled' } as const;
const scenario = (name: string) => KNEE_SCENARIOS.find((s) => s.name.startsWith(name))!;

/** A scenario's verdict from a process of its own. */
async function verdictApart(gate: string, scenarioName: string): Promise<Verdict> {
  const script = join(dist, 'test/qos/knee-verdict.js');
  const { stdout } = await promisify(execFile)(process.execPath, [script, gate, scenarioName]);
  return JSON.parse(stdout) as Verdict;
}

describe('the adaptive limits on a backend with a hard knee', () => {
  let sustained: Map<string, Promise<Verdict>>;
  beforeAll(() => {
    compile('test/qos/tsconfig.json', dist);
    // One at a time: the rest of the suite runs beside them on two cores.
    const gates = [...KNEE_ALGORITHMS.map((a) => a.algorithm), 'netflix-vegas'];
    sustained = new Map();
    let previous: Promise<unknown> = Promise.resolve();
    for (const gate of gates) {
      const run = previous.then(() => verdictApart(gate, SUSTAINED));
      previous = run.catch(() => undefined);
      sustained.set(gate, run);
    }
  }, 120_000);

  it.each(KNEE_ALGORITHMS.flatMap((a) => KNEE_SCENARIOS.map((s) => [a.algorithm, s.name, a, s] as const)))(
    '%s: %s',
    async (_algorithm, name, algorithm, s) => {
      const verdict =
        name === SUSTAINED
          ? await sustained.get(algorithm.algorithm)!
          : s.judge!(runKnee(s, adaptiveGate(algorithm, { wait: true, waiting: CONTROLLED })));
      console.log(`${algorithm.algorithm}, ${s.name}: ${verdict.why}`);
      expect({ why: verdict.why, passes: verdict.passes }).toMatchObject({ passes: true });
    },
    120_000,
  );

  it('a fixed limit with controlled waiting serves callers with a 1 s deadline within 3 L at twice the capacity', () => {
    const s = scenario('twice the capacity');
    const verdict = s.judge!(runKnee(s, { ...fixedGate(25), wait: true, waiting: CONTROLLED }));
    expect({ why: verdict.why, passes: verdict.passes }).toMatchObject({ passes: true });
  });

  it('the gates have teeth: waiting to the deadline (FIFO, what pools do), served callers wait about the whole deadline', () => {
    const s = scenario('twice the capacity');
    for (const gate of [
      { ...fixedGate(25), wait: true },
      adaptiveGate(DEFAULT_ADAPTIVE, { wait: true, waiting: { mode: 'fifo' } }),
    ]) {
      const verdict = s.judge!(runKnee(s, gate));
      expect(verdict.passes).toBe(false);
      expect(verdict.why).toMatch(/p99 ≤ (4[5-9]|5\d)\.\d\d L/);
    }
  });

  it('the gates have teeth: refusing at once, a burst after a calm is refused in part', () => {
    const s = scenario('a burst after a calm');
    expect(s.judge!(runKnee(s, adaptiveGate(DEFAULT_ADAPTIVE))).passes).toBe(false);
  });

  it('the gates have teeth: refusing at once instead, a cold limit refuses most of a burst in its first second', () => {
    const cold = scenario('cold start');
    expect(cold.judge!(runKnee(cold, adaptiveGate(DEFAULT_ADAPTIVE))).passes).toBe(false);
  });

  it('the gates have teeth: a port of Netflix’s Vegas, fed call by call, ratchets its latency past 2 L at twice the capacity', async () => {
    const verdict = await sustained.get('netflix-vegas')!;
    expect(verdict.passes).toBe(false);
    expect(verdict.why).toMatch(/p99 ≤ ([3-9]|2\.[1-9])/);
  }, 120_000);
});
