import type pg from 'pg';
import {
  type ConnectionPool,
  is,
  kConnector,
  keysOf,
  OptionReader,
  PoolConfigError,
  type Rule,
  shown,
} from '../../core/index.js';
import { driverOf } from '../index.js';

/** Options of {@link asPgPool}: pg.Pool's hooks, by pg's names and as pg runs them. */
export interface PgPoolAdapterOptions {
  /** Whether `end()` closes the pool as well (as `pg.Pool.end()` does). Default `true`. */
  closeOnEnd?: boolean;
  /**
   * Runs on each client before the face first lends it (pg.Pool: after it connects). A rejection
   * retires the client, and the checkout fails with it.
   */
  onConnect?: (client: pg.Client) => void | Promise<void>;
  /** pg.Pool's `verify(client, done)`: runs after `onConnect`; `done(err)` retires the client and fails the checkout. */
  verify?: (client: pg.Client, done: (err?: Error) => void) => void;
  /** pg.Pool's `log(...messages)`: told of checkouts, releases and the end. */
  log?: (...messages: unknown[]) => void;
  /**
   * pg.Pool's `types`: type parsers for the results of the statements sent through the face (its
   * `query()` and the clients it lends) that name none of their own. The pool's clients are
   * shared with its other users, so they are given per statement, never set on a client.
   */
  types?: pg.CustomTypesConfig;
}

/** pg.Pool options the face takes from its pool instead, and where to set them. */
const ON_THE_POOL: Record<string, string> = {
  max: 'maxSize',
  min: 'minSize',
  maxUses: 'maxUses',
  idleTimeoutMillis: 'maxIdleMs',
  connectionTimeoutMillis: 'acquireTimeoutMs',
  maxLifetimeSeconds: 'maxLifetimeMs',
};

/** The hooks the face runs, as read from its options. */
export type FaceHooks = Pick<PgPoolAdapterOptions, 'onConnect' | 'verify' | 'log' | 'types'>;

/** pg's `types`: an object with `getTypeParser(oid, format)`, as pg's `TypeOverrides` and `pg.types` are. */
const isTypes: Rule = {
  says: "pg's type parsers (an object with getTypeParser(oid, format): new TypeOverrides(), or pg.types)",
  ok: (value) => typeof (value as { getTypeParser?: unknown } | null)?.getTypeParser === 'function',
};

/** `asPgPool()`'s options, checked: a pg.Pool option that is the pool's to set is refused, naming the pool's. */
export function faceOptions(
  pool: ConnectionPool<pg.Client>,
  options: PgPoolAdapterOptions,
): { closeOnEnd: boolean; hooks: FaceHooks } {
  for (const key of Object.keys(options ?? {})) {
    const there = ON_THE_POOL[key];
    if (there !== undefined) {
      throw new PoolConfigError(
        'asPgPool()',
        key,
        `is the pool's to set, not the face's: give the pool { ${there} } (new ConnectionPool(pgConnector(url), { ${there} }), or the pool's options in PoolModule)`,
        'module',
      );
    }
  }
  const read = new OptionReader({ subject: 'module', name: 'asPgPool()' }, options).only(
    keysOf<PgPoolAdapterOptions>({ closeOnEnd: true, onConnect: true, verify: true, log: true, types: true }),
    "asPgPool()'s options",
  );
  if (typeof (pool as Partial<ConnectionPool<pg.Client>>)?.acquire !== 'function' || typeof pool.use !== 'function') {
    read.fail(
      'pool',
      `(the first argument) must be a ConnectionPool of pg clients (new ConnectionPool(pgConnector(url)) or @InjectPool('db')), got ${shown(pool)}`,
    );
  }
  const driver = driverOf((pool as { [kConnector]?: object })[kConnector] ?? {});
  if (driver !== undefined && driver !== 'pg')
    read.fail(
      'pool',
      `(the first argument) is a pool of ${driver} connections: asPgPool() takes a pool of pg clients (pgConnector)`,
    );
  const hooks: FaceHooks = {
    onConnect: read.get('onConnect', is.function),
    verify: read.get('verify', is.function),
    log: read.get('log', is.function),
    types: read.get('types', isTypes),
  };
  return { closeOnEnd: read.get('closeOnEnd', is.boolean, true), hooks };
}
