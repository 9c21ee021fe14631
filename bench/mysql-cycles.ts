/**
 * MariaDB / MySQL `SELECT 1` through `mysql2Connector` with its default reset (the server's
 * status flags and session tracking read on every reply) against the same connector with no reset,
 * and beside mysql2's own pool; each variant in a process of its own, taken in turn (see
 * fresh-process.ts), paired round by round.
 *
 * Run by `npm run bench`; `node dist-bench/bench/mysql-cycles.js <variant> <callers>` prints the
 * best of five rounds (queries per second) as JSON.
 */
import mysql from 'mysql2/promise';
import { ConnectionPool } from '../lib/core/index.js';
import { mysql2Connector } from '../lib/connectors/mysql2/index.js';
import { alternatingWithCallers, callRound, serveWhenRun, type Rounds } from './fresh-process.js';

/** The connector with its default reset (`'changed'`), with `reset: false`, and mysql2's own pool. */
export type MysqlVariant = 'use(), default reset' | 'use(), no reset' | 'mysql2 pool';

const CONFIG = { host: '127.0.0.1', port: 3306, user: 'root', database: 'test' };
const MAX = 10;
/** A round: 5,000 queries. */
const ROUND_QUERIES = 5_000;

async function setUp(variant: MysqlVariant, callers: number): Promise<Rounds> {
  if (variant === 'mysql2 pool') {
    const pool = mysql.createPool({ ...CONFIG, connectionLimit: MAX });
    const round = callRound(callers, () => pool.query('SELECT 1'));
    return { round: () => round(ROUND_QUERIES), close: () => pool.end(), warmRounds: 8 };
  }
  const connector = mysql2Connector(CONFIG, variant === 'use(), no reset' ? { reset: false } : {});
  const logger = { warn: () => {}, error: (message: string) => console.error(message) };
  const pool = new ConnectionPool(connector, { name: 'mysql', maxSize: MAX, minSize: MAX, metrics: false, logger });
  await pool.warmup();
  const round = callRound(callers, () => pool.use((conn) => conn.query('SELECT 1')));
  return { round: () => round(ROUND_QUERIES), close: () => pool.close(), warmRounds: 8 };
}

/** Sets of live processes, one per variant, the variants in turn (see {@link alternatingWithCallers}). */
export const alternatingMysqlCycles = alternatingWithCallers<MysqlVariant>(import.meta.url);

serveWhenRun(import.meta.url, ([variant, callers]) => setUp(variant as MysqlVariant, Number(callers)));
