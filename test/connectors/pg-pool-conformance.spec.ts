// The pg.Pool face against pg.Pool's documented behaviour (node-postgres.com/apis/pool), case by
// case, each run on the real pg.Pool beside the face on the real PostgreSQL: what pg.Pool does,
// the face does.
import { afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import Cursor from 'pg-cursor';
import { compile, root } from '../support/compile.js';
import { ConnectionPool, type PoolLogger } from '../../lib/index.js';
import { asPgPool, pgConnector, type PgPoolAdapterOptions } from '../../lib/connectors/pg/index.js';

const URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
const quiet: PoolLogger = { warn: () => {}, error: () => {} };

type Make = (max?: number, url?: string) => pg.Pool;
const makers: [string, Make][] = [
  ['pg.Pool', (max = 2, url = URL) => new pg.Pool({ connectionString: url, max })],
  [
    'the face',
    (max = 2, url = URL) =>
      asPgPool(new ConnectionPool(pgConnector(url), { name: 'face', maxSize: max, logger: quiet })),
  ],
];

describe.each(makers)('%s, as pg.Pool documents it', (_name, make) => {
  let pool: pg.Pool;
  beforeEach(() => {
    pool = make();
  });
  afterEach(async () => {
    if (!pool.ending) await pool.end();
  });

  it('a second release() throws', async () => {
    const client = await pool.connect();
    client.release();
    expect(() => client.release()).toThrow('Release called on client which has already been released to the pool.');
  });

  it('end() lets a checkout and a query issued before it finish, then ends', async () => {
    const checkout = pool.connect();
    const query = pool.query('SELECT 41 + 1 AS n');
    const ended = pool.end();
    const client = await checkout;
    expect((await client.query('SELECT 1 AS one')).rows[0].one).toBe(1);
    expect((await query).rows[0].n).toBe(42);
    expect(pool.ended).toBe(false);
    client.release();
    await ended;
    expect(pool.ended).toBe(true);
  });

  it('after end(), connect() and query() fail, and a second end() fails', async () => {
    await pool.end();
    await expect(pool.connect()).rejects.toThrow('Cannot use a pool after calling end on the pool');
    await expect(pool.query('SELECT 1')).rejects.toThrow('Cannot use a pool after calling end on the pool');
    await expect(pool.end()).rejects.toThrow('Called end on pool more than once');
    const viaCallback = await new Promise<Error | undefined>((resolve) =>
      (pool.end as (cb: (err?: Error) => void) => void)((err) => resolve(err)),
    );
    expect(viaCallback?.message).toBe('Called end on pool more than once');
  });

  it('query() with a function first is refused, to that function', async () => {
    const err = await new Promise<Error>((resolve) => pool.query(resolve as never));
    expect(err.message).toBe('Passing a function as the first parameter to pool.query is not supported');
  });

  it('query(text, values, callback) and query(config, callback) answer through the callback', async () => {
    const [a, b] = await Promise.all([
      new Promise((resolve) => pool.query('SELECT $1::int AS n', [7], (err, r) => resolve(err ?? r.rows[0].n))),
      new Promise((resolve) => pool.query({ text: 'SELECT 8 AS n' }, (err, r) => resolve(err ?? r.rows[0].n))),
    ]);
    expect([a, b]).toEqual([7, 8]);
  });

  it('connect, acquire and release events follow each checkout; remove follows a client released with an error', async () => {
    const events: string[] = [];
    pool.on('connect', () => events.push('connect'));
    pool.on('acquire', () => events.push('acquire'));
    pool.on('release', (err: Error | undefined) => events.push(err === undefined ? 'release' : 'release(err)'));
    const removed = new Promise<void>((resolve) => pool.on('remove', () => resolve()));
    const first = await pool.connect();
    first.release();
    const again = await pool.connect();
    again.release(new Error('broken'));
    await removed;
    expect(events).toEqual(['connect', 'acquire', 'release', 'acquire', 'release(err)']);
  });

  it('a client its caller ended is not lent again', async () => {
    const first = await pool.connect();
    const pid = (await first.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
    await first.end();
    first.release();
    const next = await pool.connect();
    expect((await next.query('SELECT pg_backend_pid() AS pid')).rows[0].pid).not.toBe(pid);
    next.release();
  });

  it('the counts follow the clients', async () => {
    const a = await pool.connect();
    const b = await pool.connect();
    expect(pool.totalCount).toBe(2);
    a.release();
    b.release();
    expect({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }).toEqual({
      total: 2,
      idle: 2,
      waiting: 0,
    });
  });

  it("a connect to a database that does not exist fails at once with the server's error and code", async () => {
    const missing = make(2, URL.replace(/\/test$/, '/nsp_no_such_database'));
    const started = performance.now();
    const err = (await missing.connect().catch((e: unknown) => e)) as Error & { code?: string };
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(err.code).toBe('3D000');
    expect(err.message).toBe('database "nsp_no_such_database" does not exist');
    await missing.end();
  });

  it('a connect to a closed port fails with the socket error and its code', async () => {
    const closed = make(2, 'postgresql://postgres@127.0.0.1:1/test');
    const err = (await closed.connect().catch((e: unknown) => e)) as Error & { code?: string };
    expect(err.code).toBe('ECONNREFUSED');
    await closed.end();
  }, 30_000);
});

type Hooked = Pick<PgPoolAdapterOptions, 'onConnect' | 'verify' | 'log' | 'types'>;
const hooked: [string, (hooks: Hooked) => pg.Pool][] = [
  ['pg.Pool', (hooks) => new pg.Pool({ connectionString: URL, max: 1, ...hooks } as pg.PoolConfig)],
  [
    'the face',
    (hooks) => asPgPool(new ConnectionPool(pgConnector(URL), { name: 'face-hooks', maxSize: 1, logger: quiet }), hooks),
  ],
];

describe.each(hooked)("%s: onConnect, verify, log and types, as pg.Pool's options", (_name, make) => {
  it('onConnect and verify run once per new client, before it is lent; log is told', async () => {
    const seen: string[] = [];
    const messages: unknown[] = [];
    const pool = make({
      onConnect: async (client) => {
        seen.push('onConnect');
        await client.query("SET application_name = 'hooked'");
      },
      verify: (_client, done) => {
        seen.push('verify');
        done();
      },
      log: (...m) => messages.push(m[0]),
    });
    for (let i = 0; i < 3; i++) {
      const client = await pool.connect();
      expect((await client.query('SHOW application_name')).rows[0].application_name).toBe('hooked');
      client.release();
    }
    expect(seen).toEqual(['onConnect', 'verify']);
    expect(messages.length).toBeGreaterThan(0);
    await pool.end();
  });

  it('an onConnect that rejects fails the checkout with its error, and the next checkout gets another client', async () => {
    let calls = 0;
    const pool = make({
      onConnect: async () => {
        if (++calls === 1) throw new Error('the hook refused');
      },
    });
    await expect(pool.connect()).rejects.toThrow('the hook refused');
    const client = await pool.connect();
    expect((await client.query('SELECT 1 AS one')).rows[0].one).toBe(1);
    client.release();
    expect(calls).toBe(2);
    await pool.end();
  });

  it('a verify that fails fails the checkout with its error', async () => {
    const pool = make({ verify: (_client, done) => done(new Error('not verified')) });
    await expect(pool.connect()).rejects.toThrow('not verified');
    await pool.end();
  });

  it('types parse the results of its query() and of the clients it lends, unless a query names its own', async () => {
    const types = new pg.TypeOverrides();
    types.setTypeParser(1114, (text: string) => `timestamp ${text}`);
    const pool = make({ types });
    const stamp = "SELECT '2026-12-02 10:00:00'::timestamp AS t";
    expect((await pool.query(stamp)).rows[0].t).toBe('timestamp 2026-12-02 10:00:00');
    const client = await pool.connect();
    expect((await client.query(stamp)).rows[0].t).toBe('timestamp 2026-12-02 10:00:00');
    expect((await client.query({ text: 'SELECT $1::timestamp AS t', values: ['2026-12-02 10:00:00'] })).rows[0].t).toBe(
      'timestamp 2026-12-02 10:00:00',
    );
    const own = { text: stamp, types: { getTypeParser: () => (text: string) => `own ${text}` } };
    expect((await client.query(own)).rows[0].t).toBe('own 2026-12-02 10:00:00');
    const cursor = client.query(new Cursor(stamp));
    const rows = await new Promise<{ t: unknown }[]>((resolve, reject) =>
      cursor.read(1, (err: Error | undefined, r: { t: unknown }[]) => (err ? reject(err) : resolve(r))),
    );
    expect(rows[0]!.t).toBe('timestamp 2026-12-02 10:00:00');
    await cursor.close();
    client.release();
    await pool.end();
  });
});

describe('the face refuses what is the pool’s to set', () => {
  it.each([
    ['maxUses', 'maxUses'],
    ['max', 'maxSize'],
    ['idleTimeoutMillis', 'maxIdleMs'],
  ])('%s: set %s on the pool', async (key, there) => {
    const pool = new ConnectionPool(pgConnector(URL), { name: 'face-refuses', logger: quiet });
    expect(() => asPgPool(pool, { [key]: 1 } as never)).toThrow(
      new RegExp(`option "${key}" is the pool's to set, not the face's: give the pool \\{ ${there} \\}`),
    );
    await pool.close();
  });
});

// Jest catches an uncaught exception itself, so these run in processes of their own, on the
// compiled package: the process must die of the callback's throw, as it does with pg.Pool.
describe('callbacks run outside the promise chain', () => {
  const dist = join(root, 'dist-test-pg-face');
  beforeAll(() => compile('tsconfig.build.json', dist), 60_000);

  const script = (pool: string, call: string) => `
    import pg from 'pg';
    import { ConnectionPool } from '${dist}/index.js';
    import { asPgPool, pgConnector } from '${dist}/connectors/pg/index.js';
    process.on('unhandledRejection', (e) => { console.error('UNHANDLED', e?.message); process.exit(3); });
    const url = ${JSON.stringify(URL)};
    const pool = ${pool};
    ${call}
  `;
  const pools = {
    'pg.Pool': 'new pg.Pool({ connectionString: url })',
    'the face': "asPgPool(new ConnectionPool(pgConnector(url), { name: 'face' }))",
  };
  const calls = {
    connect: "pool.connect((err, client, done) => { done(); throw new Error('the callback threw'); });",
    query: "pool.query('SELECT 1', () => { throw new Error('the callback threw'); });",
  };

  it.each(
    Object.keys(pools).flatMap((p) =>
      Object.keys(calls).map((c) => [p, c] as [keyof typeof pools, keyof typeof calls]),
    ),
  )('%s: a throw in the callback of %s() is an uncaught exception', (pool, call) => {
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script(pools[pool], calls[call])], {
      cwd: root,
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(run.stderr).toContain('the callback threw');
    expect(run.stderr).not.toContain('UNHANDLED');
    expect(run.status).toBe(1);
  });
});

describe('the face, where pg.Pool leaves a choice', () => {
  it('a connect that outwaits the deadline fails with pg’s timeout message, the pool’s reason as its cause', async () => {
    const pool = new ConnectionPool(pgConnector(URL), {
      name: 'face-timeout',
      maxSize: 1,
      acquireTimeoutMs: 100,
      logger: quiet,
    });
    const face = asPgPool(pool);
    const held = await face.connect();
    const err = (await face.connect().catch((e: unknown) => e)) as Error;
    expect(err.message).toBe('timeout exceeded when trying to connect');
    expect((err.cause as Error).name).toBe('ConnectionsExhaustedError');
    held.release();
    await face.end();
  });

  it('options give the sizes and the connection settings in pg’s names, never the password', async () => {
    const pool = new ConnectionPool(pgConnector('postgresql://postgres:s3cret@127.0.0.1:5432/test'), {
      name: 'face-options',
      maxSize: 7,
      minSize: 0,
      maxIdleMs: 5_000,
      logger: quiet,
    });
    const face = asPgPool(pool);
    expect(face.options).toMatchObject({
      max: 7,
      min: 0,
      idleTimeoutMillis: 5_000,
      connectionString: 'postgresql://postgres@127.0.0.1:5432/test',
    });
    expect(JSON.stringify(face.options)).not.toContain('s3cret');
    const fromConfig = asPgPool(
      new ConnectionPool(pgConnector({ host: '127.0.0.1', database: 'test', user: 'postgres', password: 's3cret' }), {
        name: 'face-config',
        logger: quiet,
      }),
    );
    expect(fromConfig.options).toMatchObject({ host: '127.0.0.1', database: 'test', user: 'postgres' });
    expect('password' in fromConfig.options).toBe(false);
    await Promise.all([face.end(), fromConfig.end()]);
  });

  it("an idle client's error is emitted to listeners, and with none it never crashes the process", async () => {
    const pool = new ConnectionPool(pgConnector(URL), { name: 'face-idle-error', maxSize: 1, logger: quiet });
    const face = asPgPool(pool);
    const kill = async () => {
      const c = await face.connect();
      const pid = (await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
      c.release();
      const killer = new pg.Client(URL);
      await killer.connect();
      await killer.query('SELECT pg_terminate_backend($1)', [pid]);
      await killer.end();
    };
    const seen = new Promise<Error>((resolve) => face.once('error', (err: Error) => resolve(err)));
    await kill();
    expect((await seen).message).toMatch(/terminat/i);
    await kill(); // nobody listens now: no crash, and the next checkout gets a live client
    const next = await face.connect();
    expect((await next.query('SELECT 1 AS one')).rows[0].one).toBe(1);
    next.release();
    await face.end();
  });
});
