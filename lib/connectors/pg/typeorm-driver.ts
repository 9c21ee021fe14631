import pg from 'pg';
import { type ConnectionPool, OptionReader, PoolConfigError, shown } from '../../core/index.js';
import { asPgPool, type PgPoolAdapterOptions } from './pg-pool-adapter.js';
import { connectionSettings } from './pg-connector.js';

/** What TypeORM's postgres driver tells its `pg.Pool` of one host: its connection options, merged with `extra`. */
export interface TypeOrmPoolConfig {
  readonly connectionString?: string;
  readonly host?: string;
  readonly port?: number;
  readonly user?: string;
  readonly database?: string;
  readonly [option: string]: unknown;
}

/** Which pool serves a host of TypeORM's (its `replication.master`, each of `replication.slaves`, or its one). */
export type TypeOrmPoolRoute = (host: TypeOrmPoolConfig) => ConnectionPool<pg.Client>;

/** What TypeORM takes as its postgres `driver`: the part of the pg module it uses. */
export interface TypeOrmPgDriver {
  /** TypeORM's `new driver.Pool(options)`: the face of the pool that serves that host. */
  readonly Pool: new (options: TypeOrmPoolConfig) => pg.Pool;
  /** TypeORM sets `parseInt8` here before it makes a pool: that DataSource's bigints come back as numbers. */
  readonly defaults: { parseInt8: boolean };
}

/** What TypeORM may pass that names the server; each must match the pool's own, where both name it. */
const SERVER_SETTINGS = ['host', 'port', 'user', 'database'] as const;

/** What TypeORM passes and the pool's connector settles instead (its credentials, TLS, application name). */
const CONNECTOR_SETTINGS = new Set(['connectionString', 'password', 'ssl', 'application_name', ...SERVER_SETTINGS]);

/** TypeORM's pool sizing and timeout, by pg's name: TypeORM's name for it, and the pool's. */
const SIZING: Record<string, readonly [string, string]> = {
  max: ['poolSize', 'maxSize'],
  connectionTimeoutMillis: ['connectTimeoutMS', 'acquireTimeoutMs'],
};

/** pg's type for int8 (bigint, count(*)). */
const INT8 = 20;

/**
 * TypeORM's postgres `driver` on this library's pools: `{ type: 'postgres', driver:
 * typeormDriver(db) }` in a DataSource's options, or in `TypeOrmModule.forRootAsync`'s factory
 * with the pool injected (docs/orms.md). TypeORM then runs on the pool: its queries and
 * transactions take the pool's connections, limits and deadlines, and inside a `@UsePooled`
 * scope they are units of work of the scope's connection, their transactions savepoints of the
 * method's.
 *
 * `pools` is the pool, or, with TypeORM's `replication`, a function that picks each host's pool
 * from what TypeORM gives that host. The server settings TypeORM passes (`host`, `port`,
 * `username`, `database`, `url`) may be left out; where given, they must name the pool's server,
 * or TypeORM's initialize() fails saying which differs. Pool sizing (`poolSize`,
 * `connectTimeoutMS`) is the pool's, and is refused. `face` takes asPgPool()'s options; `end()`
 * (TypeORM's `destroy()`) leaves the pool open unless `face.closeOnEnd` is true: the pool's owner
 * (the Nest module) closes it.
 */
export function typeormDriver(
  pools: ConnectionPool<pg.Client> | TypeOrmPoolRoute,
  face: PgPoolAdapterOptions = {},
): TypeOrmPgDriver {
  const route: TypeOrmPoolRoute = typeof pools === 'function' ? pools : () => pools;
  let parseInt8 = false;
  // An accessor, as pg's own defaults.parseInt8 is: TypeORM sets it only where it finds a setter.
  const defaults = {
    get parseInt8(): boolean {
      return parseInt8;
    },
    set parseInt8(value: boolean) {
      parseInt8 = value === true;
    },
  };
  class TypeOrmPool {
    constructor(options: TypeOrmPoolConfig) {
      const pool = route(options);
      if (typeof (pool as Partial<ConnectionPool<pg.Client>> | undefined)?.acquire !== 'function') {
        throw new PoolConfigError(
          'typeormDriver()',
          'pools',
          `must be a ConnectionPool of pg clients, or a function that gives one for each of TypeORM's hosts; for ${describe(options)} it gave ${shown(pool)}`,
          'module',
        );
      }
      checkOptions(pool, options);
      const types = parseInt8 ? int8AsNumber(face.types) : face.types;
      return asPgPool(pool, { closeOnEnd: false, ...face, ...(types === undefined ? {} : { types }) });
    }
  }
  return { Pool: TypeOrmPool as unknown as TypeOrmPgDriver['Pool'], defaults };
}

/**
 * What TypeORM gave for a host: pool sizing and pg options are refused, naming where they go; the
 * settings that name a server must agree with the pool's where both are given.
 */
function checkOptions(pool: ConnectionPool<pg.Client>, options: TypeOrmPoolConfig): void {
  const read = new OptionReader({ subject: 'module', name: 'typeormDriver()' }, options);
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined || CONNECTOR_SETTINGS.has(key)) continue;
    const sizing = SIZING[key];
    if (sizing !== undefined) {
      // Named as TypeORM's option, which the user wrote (pg's name for it is `key`).
      read.fail(sizing[0], `is the pool's to set: leave TypeORM's ${sizing[0]} out and give the pool { ${sizing[1]} }`);
    }
    read.fail(
      key,
      `(from TypeORM's extra) is not for the face: pg client settings go to the pool's connector (pgConnector({ ${key} })), pool settings to the pool's options, and the face's hooks to typeormDriver(pool, { onConnect, verify, log, types })`,
    );
  }
  const theirs = serverOf(options);
  const ours = serverOf(connectionSettings(pool) as TypeOrmPoolConfig);
  for (const key of SERVER_SETTINGS) {
    const a = theirs[key];
    const b = ours[key];
    if (a !== undefined && b !== undefined && String(a) !== String(b)) {
      throw new PoolConfigError(
        'typeormDriver()',
        key,
        `TypeORM names ${key} ${shown(a)} but pool "${pool.name}" connects to ${shown(b)}: the pool connects, so leave the server settings out of TypeORM's options, or route this host to its own pool`,
        'module',
      );
    }
  }
}

/** host, port, user and database from a config's fields, or else from its connection string. */
function serverOf(config: TypeOrmPoolConfig): Partial<Record<(typeof SERVER_SETTINGS)[number], string>> {
  const out: Partial<Record<(typeof SERVER_SETTINGS)[number], string>> = {};
  let url: URL | undefined;
  try {
    url = typeof config.connectionString === 'string' ? new URL(config.connectionString) : undefined;
  } catch {
    url = undefined;
  }
  const fromUrl = {
    host: url?.hostname || undefined,
    port: url?.port || undefined,
    user: url?.username ? decodeURIComponent(url.username) : undefined,
    database: url?.pathname && url.pathname !== '/' ? decodeURIComponent(url.pathname.slice(1)) : undefined,
  };
  for (const key of SERVER_SETTINGS) {
    const value = config[key] ?? fromUrl[key];
    if (value !== undefined && value !== null && value !== '') out[key] = String(value);
  }
  return out;
}

function describe(options: TypeOrmPoolConfig): string {
  const server = serverOf(options);
  return Object.keys(server).length === 0
    ? 'a host with no server settings'
    : Object.entries(server)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
}

/**
 * Type parsers that give int8 as a JavaScript number, as pg's `defaults.parseInt8` does, for one
 * face only: over the face's own `types` where given, else pg's.
 */
function int8AsNumber(under: pg.CustomTypesConfig | undefined): pg.CustomTypesConfig {
  const types = new pg.TypeOverrides(under as ConstructorParameters<typeof pg.TypeOverrides>[0]);
  types.setTypeParser(INT8, (value: string) => Number.parseInt(value, 10));
  return types;
}
