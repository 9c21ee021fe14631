/**
 * This build against another checkout's, the same measurements taken in turn: the question a
 * change that should not change speed must answer (a refactor, a moved file). The other checkout
 * has its bench compiled (`npx tsc -p bench/tsconfig.json` there); each of its live processes runs
 * its own compiled fresh-cycles.js and pg-cycles.js, so each side measures its own library.
 *
 *   npm run bench -- --baseline ../other-checkout
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { alternating } from '../fresh-process.js';
import { SHAPES, type FreshShape } from '../fresh-cycles.js';
import { describe, pairedRatio } from '../paired.js';

type Side = 'this build' | 'baseline';
const SIDES: readonly Side[] = ['this build', 'baseline'];

/** Sets of processes and rounds in each: as the bench's own rows of the same shapes. */
const SETS = 8;
const ROUNDS = 12;

/** The same compiled module of this build and of the baseline's (`dist-bench/bench/<name>.js` under each). */
function modulesOf(dir: string, name: string): (side: Side) => string {
  const theirs = join(resolve(dir), 'dist-bench/bench', name);
  if (!existsSync(theirs))
    throw new Error(`${theirs} is missing: run \`npx tsc -p bench/tsconfig.json\` in ${dir} first`);
  const ours = new URL(`../${name}`, import.meta.url).href;
  return (side) => (side === 'this build' ? ours : pathToFileURL(theirs).href);
}

/** Rows of this build's rate over the baseline's: the warm cycle (1 and 100 callers), the deep queue, and PostgreSQL through use(). */
export async function baselineBench(dir: string): Promise<string[][]> {
  const rows: string[][] = [];
  const fresh = modulesOf(dir, 'fresh-cycles.js');
  for (const shape of Object.keys(SHAPES) as FreshShape[]) {
    const rounds = await alternating(fresh, SIDES, () => ['pool', shape], SETS, ROUNDS);
    rows.push([
      shape,
      'acquire and release, this build / baseline',
      describe(pairedRatio(rounds, (r) => r['this build'] / r.baseline)),
    ]);
  }
  const pg = modulesOf(dir, 'pg-cycles.js');
  for (const callers of [50, 200]) {
    const rounds = await alternating(pg, SIDES, () => ['use()', String(callers)], SETS * 2, ROUNDS);
    rows.push([
      `PostgreSQL SELECT 1, ${callers} callers`,
      'queries through use(), this build / baseline',
      describe(pairedRatio(rounds, (r) => r['this build'] / r.baseline)),
    ]);
  }
  return rows;
}
