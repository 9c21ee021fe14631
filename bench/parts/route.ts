import { alternatingRoutes, CONTEXT_FRAME } from '../nest-route.js';
import { bestOf, describe, pairedRatio } from '../paired.js';
import { PG_ROUNDS } from './postgres.js';

/** Each set boots two Nest apps: half the sets of the bare PostgreSQL part. */
const ROUTE_SETS = 8;

/**
 * A NestJS route doing one query, over HTTP, through `@UsePooled` against the same route on
 * `pg.Pool`: 50 requests at once, max 10 connections, fresh processes in turn.
 */
export async function routeBench(
  results: Record<string, unknown>,
  rows: string[][],
  fmt: (n: number) => string,
): Promise<void> {
  const rounds = await alternatingRoutes(ROUTE_SETS, PG_ROUNDS);
  const best = bestOf(rounds);
  const ratio = pairedRatio(rounds, (r) => r['@UsePooled'] / r['pg.Pool']);
  results.route = { node: process.version, best, ratio, rounds };
  const shape = `a Nest route doing one query, HTTP, 50 at once, max 10, fresh processes (${process.version})`;
  rows.push([
    shape,
    '@UsePooled / pg.Pool (best of each, requests)',
    `${fmt(best['@UsePooled'])} / ${fmt(best['pg.Pool'])}`,
    '',
  ]);
  rows.push([shape, '@UsePooled / pg.Pool, round by round', describe(ratio, 1.0), 'target ≥ 1.0× on Node 22 and 24']);
  if (best['@UsePooled, async context frame'] === undefined) return;
  const framed = pairedRatio(rounds, (r) => r['@UsePooled, async context frame'] / r['pg.Pool']);
  results.route = { ...(results.route as object), framed };
  rows.push([shape, `@UsePooled with ${CONTEXT_FRAME} / pg.Pool`, describe(framed, 1.0), 'target ≥ 1.0×']);
}
