/**
 * A NestJS route doing one PostgreSQL query, end to end over HTTP: through a service method with
 * `@UsePooled('db')` (the query on `pool.current`, the pg connector's reset on return) against the
 * same route on a `pg.Pool` (`pool.query()`), each variant a Nest app in a process of its own,
 * taken in turn. The requests come from a process of their own (bench/http-load.ts: 50 at once on
 * keep-alive sockets), so the server's process runs only the app.
 *
 * Run by `npm run bench`; `node dist-bench/bench/nest-route.js <variant>` prints the best of five
 * rounds (requests per second) as JSON.
 */
import 'reflect-metadata';
import { Controller, Get, Inject, Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { fork } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { ConnectionPool, InjectPool, PoolModule, UsePooled } from '../lib/index.js';
import { pgConnector } from '../lib/connectors/pg/index.js';
import { fileURLToPath } from 'node:url';
import { alternating, serveWhenRun, type Rounds } from './fresh-process.js';
import { PG_URL } from './pg-cycles.js';

export type RouteVariant = '@UsePooled' | 'pg.Pool' | '@UsePooled, async context frame';
/** The flag with which Node 22 carries AsyncLocalStorage's context as Node 24 does, without a promise hook. */
export const CONTEXT_FRAME = '--experimental-async-context-frame';
/** On Node 22, @UsePooled also runs with {@link CONTEXT_FRAME} (Node 24 needs no flag; Node 20 has none). */
export const ROUTE_VARIANTS: readonly RouteVariant[] = process.versions.node.startsWith('22.')
  ? ['@UsePooled', 'pg.Pool', '@UsePooled, async context frame']
  : ['@UsePooled', 'pg.Pool'];

const MAX = 10;
const CALLERS = 50;
const ROUND_REQUESTS = 2_000;
const PG_POOL = Symbol('pg.Pool');

@Injectable()
class Pooled {
  constructor(@InjectPool('db') private readonly db: ConnectionPool<pg.Client>) {}

  @UsePooled('db')
  async one(): Promise<unknown> {
    return (await this.db.current.query('SELECT 1 AS one')).rows[0];
  }
}

@Injectable()
class Plain {
  constructor(@Inject(PG_POOL) private readonly pool: pg.Pool) {}

  async one(): Promise<unknown> {
    return (await this.pool.query('SELECT 1 AS one')).rows[0];
  }
}

@Controller()
class PooledRoute {
  constructor(private readonly service: Pooled) {}
  @Get('one')
  one(): Promise<unknown> {
    return this.service.one();
  }
}

@Controller()
class PlainRoute {
  constructor(private readonly service: Plain) {}
  @Get('one')
  one(): Promise<unknown> {
    return this.service.one();
  }
}

@Module({
  imports: [
    PoolModule.forRoot({
      pools: [{ name: 'db', connector: pgConnector(PG_URL), options: { maxSize: MAX, minSize: MAX } }],
    }),
  ],
  controllers: [PooledRoute],
  providers: [Pooled],
})
class PooledApp {}

@Module({
  controllers: [PlainRoute],
  providers: [Plain, { provide: PG_POOL, useFactory: () => new pg.Pool({ connectionString: PG_URL, max: MAX }) }],
})
class PlainApp {}

async function setUp(variant: RouteVariant): Promise<Rounds> {
  const app = await NestFactory.create(variant === 'pg.Pool' ? PlainApp : PooledApp, { logger: false });
  app.enableShutdownHooks();
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  const load = fork(fileURLToPath(new URL('./http-load.js', import.meta.url)), [String(port), String(CALLERS), '/one']);
  const round = () =>
    new Promise<number>((resolve, reject) => {
      load.once('message', (rate) => resolve(rate as number));
      load.once('exit', (code) => reject(new Error(`the load process exited (${code})`)));
      load.send(ROUND_REQUESTS);
    }).finally(() => load.removeAllListeners('exit'));
  return {
    round,
    close: async () => {
      load.disconnect();
      if (variant === 'pg.Pool') await app.get<pg.Pool>(PG_POOL).end();
      await app.close();
    },
    warmRounds: 5,
  };
}

/** `sets` sets of live processes, one per variant, `rounds` rounds each, the variants in turn. */
export function alternatingRoutes(sets: number, rounds: number): Promise<Record<RouteVariant, number>[][]> {
  return alternating(
    import.meta.url,
    ROUTE_VARIANTS,
    (variant) => [variant],
    sets,
    rounds,
    {},
    (variant) => (variant === '@UsePooled, async context frame' ? [CONTEXT_FRAME] : []),
  );
}

serveWhenRun(import.meta.url, ([variant]) => setUp(variant as RouteVariant));
