// The ioredis connectors against the real Redis, however a command is sent: a method, `call`,
// `send_command`, `callBuffer`, `sendCommand`, a pipeline, `multi()`, in any case. On the shared
// client whatever would change or hold the connection is refused while other callers run, none of
// whose writes is lost, misplaced or kept waiting; on the exclusive client the next caller finds
// the connection clean after any of them; a create that fails says why in the server's words.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Command, Redis } from 'ioredis';
import { ConnectionPool, type PoolLogger } from '../../lib/index.js';
import { redisConnector, sharedRedisConnector } from '../../lib/connectors/ioredis/index.js';
import { monitorRedis } from '../support/redis-monitor.js';
import { sleep, until } from '../support/wait.js';

const URL = 'redis://127.0.0.1:6379/0';
const KEY = `nsp:redis-gate:${process.pid}`;
const quiet: PoolLogger = { warn: () => {}, error: () => {} };

let observer: Redis;

beforeAll(async () => {
  observer = new Redis(URL);
  await observer.ping();
});

afterAll(async () => {
  for (const db of [3, 9, 0]) {
    await observer.select(db);
    const keys = await observer.keys(`${KEY}*`);
    if (keys.length > 0) await observer.del(...keys);
  }
  await observer.quit();
  observer.disconnect();
});

type Send = (client: Redis, key: string) => unknown;
type Loose = Redis & { send_command(...args: unknown[]): Promise<unknown> };
const loose = (client: Redis) => client as Loose;

/** What CLIENT INFO says of `client`'s connection: its database, MULTI, subscriptions, flags. */
async function infoOf(client: Redis): Promise<Record<string, string>> {
  const line = String(await client.call('CLIENT', 'INFO'));
  return Object.fromEntries(
    line
      .trim()
      .split(' ')
      .map((pair) => pair.split('=') as [string, string]),
  );
}

/** `promise`, or a failure naming `what` if it has not settled within `ms`. */
function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still waiting after ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

describe('sharedRedisConnector: one gate for every way a command is sent', () => {
  const refused: [string, Send][] = [
    ['select()', (c) => c.select(3)],
    ["call('SELECT', 3)", (c) => c.call('SELECT', 3)],
    ["call('select', '3')", (c) => c.call('select', '3')],
    ["send_command('SeLeCt', 3)", (c) => loose(c).send_command('SeLeCt', 3)],
    ["callBuffer('SELECT', 3)", (c) => c.callBuffer('SELECT', 3)],
    ["sendCommand(new Command('SELECT'))", (c) => c.sendCommand(new Command('SELECT', ['3']))],
    ["call('MULTI')", (c) => c.call('MULTI')],
    ["call('exec')", (c) => c.call('exec')],
    ["call('WATCH')", (c, k) => c.call('WATCH', k)],
    ["call('BLPOP', key, 0)", (c, k) => c.call('BLPOP', k, 0)],
    ["call('blmove', ..., 0)", (c, k) => c.call('blmove', k, `${k}:to`, 'LEFT', 'RIGHT', 0)],
    ["call('XREAD', 'block', 0)", (c, k) => c.call('XREAD', 'block', 0, 'STREAMS', k, '$')],
    ["call('WAIT', 5, 0)", (c) => c.call('WAIT', 5, 0)],
    ["call('MONITOR')", (c) => c.call('MONITOR')],
    ["call('SUBSCRIBE')", (c, k) => c.call('SUBSCRIBE', k)],
    ['psubscribe()', (c, k) => c.psubscribe(`${k}*`)],
    ["call('CLIENT', 'REPLY', 'OFF')", (c) => c.call('CLIENT', 'REPLY', 'OFF')],
    ["client('SETNAME')", (c) => c.client('SETNAME', 'mine')],
    ["call('HELLO', 2)", (c) => c.call('HELLO', 2)],
    ["call('RESET')", (c) => c.call('RESET')],
    ["call('QUIT')", (c) => c.call('QUIT')],
    ['quit()', (c) => c.quit()],
    ["call('AUTH', ...)", (c) => c.call('AUTH', 'default', 'any')],
    ["call('READONLY')", (c) => c.call('READONLY')],
  ];
  const refusedPipelines: [string, Send][] = [
    ['multi().set().select().exec()', (c, k) => c.multi().set(k, 'x').select(3).exec()],
    [
      "multi([['set'], ['select']]).exec()",
      (c, k) =>
        c
          .multi([
            ['set', k, 'x'],
            ['select', 3],
          ])
          .exec(),
    ],
    ["pipeline().set().call('SELECT').exec()", (c, k) => c.pipeline().set(k, 'x').call('SELECT', 3).exec()],
    [
      "pipeline().call('multi').set().exec(): a MULTI left open",
      (c, k) => c.pipeline().call('multi').set(k, 'x').exec(),
    ],
    ['multi().set().blpop().exec()', (c, k) => c.multi().set(k, 'x').blpop(`${k}:list`, 0).exec()],
    ["multi().set().call('WATCH').exec()", (c, k) => c.multi().set(k, 'x').call('WATCH', k).exec()],
    [
      "pipeline().call('MULTI').set().call('MULTI').exec(): nested",
      (c, k) => c.pipeline().call('MULTI').set(k, 'x').call('MULTI').call('EXEC').exec(),
    ],
  ];

  let pool: ConnectionPool<Redis>;
  beforeAll(async () => {
    pool = new ConnectionPool(sharedRedisConnector(URL), { name: 'redis-gate', maxSize: 1, minSize: 1, logger: quiet });
    await pool.warmup();
  });
  afterAll(() => pool.close());

  /** 40 other callers writing and reading their own keys while `send` runs on the same client. */
  async function besideOthers(label: string, send: Send) {
    const tag = `${KEY}:beside:${label.replace(/\W+/g, '-')}`;
    const others = Array.from({ length: 40 }, (_, i) =>
      pool.use(async (c) => [await c.set(`${tag}:${i}`, String(i)), await c.get(`${tag}:${i}`)]),
    );
    const outcome = pool
      .use((c) => send(c, `${tag}:own`))
      .then(
        () => 'sent',
        (err: Error) => err.message,
      );
    const results = await within(3_000, `the other callers beside ${label}`, Promise.all(others));
    expect(results).toEqual(Array.from({ length: 40 }, (_, i) => ['OK', String(i)]));
    expect(await observer.mget(...Array.from({ length: 40 }, (_, i) => `${tag}:${i}`))).toEqual(
      Array.from({ length: 40 }, (_, i) => String(i)),
    );
    return { message: await within(1_000, label, outcome), tag };
  }

  it.each(refused)('%s is refused at once, other callers unharmed', async (label, send) => {
    const { message } = await besideOthers(label, send);
    expect(message).toMatch(
      /^[A-Z]+ .*: not on a shared connection \(sharedRedisConnector\); run it on an exclusive one \(redisConnector\)$/,
    );
    const info = await pool.use(infoOf);
    expect(info).toMatchObject({ db: '0', multi: '-1', sub: '0', psub: '0', flags: 'N', resp: '3' });
    expect(pool.stats().counters).toMatchObject({ opened: 1, retired: 0 });
  });

  it.each(refusedPipelines)('%s is refused whole, nothing of it written', async (label, send) => {
    const { message, tag } = await besideOthers(label, send);
    expect(message).toMatch(/^the pipeline was not sent: .*: not on a shared connection \(sharedRedisConnector\)/);
    for (const db of [0, 3]) {
      expect(await observer.select(db).then(() => observer.exists(`${tag}:own`))).toBe(0);
    }
    await observer.select(0);
    expect(await pool.use(infoOf)).toMatchObject({ db: '0', multi: '-1', sub: '0', flags: 'N' });
    expect(pool.stats().counters).toMatchObject({ opened: 1, retired: 0 });
  });

  it('a refused pipeline given a callback calls it back with the refusal, and leaves no rejection unhandled', async () => {
    const err = await pool.use(
      (c) =>
        new Promise<Error | null>((resolve) => {
          void c
            .multi()
            .select(3)
            .exec((e) => resolve(e ?? null));
        }),
    );
    expect(err?.message).toMatch(/^the pipeline was not sent: SELECT /);
  });

  it('what is safe still goes through in any spelling: raw plain commands, CLIENT reads, pipelined transactions', async () => {
    const k = `${KEY}:safe`;
    expect(await pool.use((c) => c.call('SET', k, '1'))).toBe('OK');
    expect(await pool.use((c) => loose(c).send_command('incr', k))).toBe(2);
    expect(String(await pool.use((c) => c.callBuffer('GET', k)))).toBe('2');
    expect(await pool.use((c) => c.call('Client', 'ID'))).toEqual(expect.any(Number));
    expect(await pool.use((c) => c.multi().incr(k).call('GET', k).exec())).toEqual([
      [null, 3],
      [null, '3'],
    ]);
    // A MULTI ended by an EXEC in the same pipeline goes out in one write: no other caller's command falls inside.
    expect(await pool.use((c) => c.pipeline().call('MULTI').incr(k).call('EXEC').get(k).exec())).toEqual([
      [null, 'OK'],
      [null, 'QUEUED'],
      [null, [4]],
      [null, '4'],
    ]);
    expect(await pool.use((c) => c.xread('STREAMS', `${k}:stream`, '0'))).toBeNull(); // XREAD without BLOCK
    expect(pool.stats().counters).toMatchObject({ opened: 1, retired: 0 });
  });
});

describe('redisConnector: the next caller finds the connection clean, however the last sent its commands', () => {
  /** `leave` on a client of a one-connection pool, then a check that the next caller's connection is clean. */
  async function nextIsClean(leave: (c: Redis, key: string) => unknown) {
    const pool = new ConnectionPool(redisConnector(URL), { name: 'redis-next', maxSize: 1, logger: quiet });
    const key = `${KEY}:next:${Math.random().toString(36).slice(2)}`;
    try {
      await pool.use((c) => leave(c, key));
      await observer.set(key, 'changed by someone else'); // what a WATCH left open would see
      const next = await within(
        3_000,
        'the next caller',
        pool.use(async (c) => {
          const info = await infoOf(c);
          return { set: await c.set(`${key}:next`, 'v'), tx: await c.multi().set(`${key}:tx`, '1').exec(), info };
        }),
      );
      expect(next.set).toBe('OK');
      expect(next.tx).toEqual([[null, 'OK']]);
      expect(next.info).toMatchObject({ db: '0', multi: '-1', sub: '0', psub: '0', flags: 'N', resp: '3' });
      expect(await observer.get(`${key}:next`)).toBe('v');
      return pool.stats().counters;
    } finally {
      await pool.close();
    }
  }

  it.each<[string, (c: Redis, key: string) => unknown]>([
    ["call('SELECT', 9)", (c) => c.call('SELECT', 9)],
    ["send_command('select', '9')", (c) => loose(c).send_command('select', '9')],
    ["sendCommand(new Command('SeLeCt'))", (c) => c.sendCommand(new Command('SeLeCt', ['9']))],
    ['pipeline().select(9).exec()', (c) => c.pipeline().select(9).exec()],
    ['multi().select(9).exec()', (c) => c.multi().select(9).exec()],
    ["call('MULTI'), left open", (c) => c.call('MULTI')],
    [
      "call('multi') and a queued SET",
      async (c, k) => [await c.call('multi'), await c.call('SET', `${k}:queued`, 'x')],
    ],
    ["pipeline().call('MULTI').set().exec()", (c, k) => c.pipeline().call('MULTI').set(`${k}:queued`, 'x').exec()],
    ["call('WATCH', key)", (c, k) => c.call('WATCH', k)],
    ["send_command('Watch', key)", (c, k) => loose(c).send_command('Watch', k)],
  ])('%s: cleaned by a command, not retired', async (_, leave) => {
    const counters = await nextIsClean(leave);
    expect(counters).toMatchObject({ opened: 1, resets: 1, resetFailures: 0, retired: 0 });
  });

  it.each<[string, (c: Redis, key: string) => unknown]>([
    ["call('SUBSCRIBE')", (c, k) => c.call('SUBSCRIBE', k)],
    ["call('psubscribe')", (c, k) => c.call('psubscribe', `${k}*`)],
    ["call('MONITOR')", (c) => c.call('MONITOR')],
    ["call('CLIENT', 'REPLY', 'OFF')", (c) => void c.call('CLIENT', 'REPLY', 'OFF').catch(() => {})],
    ["client('SETNAME')", (c) => c.client('SETNAME', 'left-behind')],
    ["call('HELLO', 2)", (c) => c.call('HELLO', 2)],
    ["call('RESET')", (c) => c.call('RESET')],
    ["call('AUTH', 'default', 'any')", (c) => c.call('AUTH', 'default', 'any').catch(() => {})],
    ["call('BLPOP', key, 0), not awaited", (c, k) => void c.call('BLPOP', k, 0).catch(() => {})],
    [
      "call('xread', 'BLOCK', 0), not awaited",
      (c, k) => void c.call('xread', 'BLOCK', 0, 'STREAMS', k, '$').catch(() => {}),
    ],
    ['disconnect()', (c) => c.disconnect()],
    ['quit()', (c) => c.quit()],
    ["call('QUIT')", (c) => c.call('QUIT')],
  ])('%s: retired, the next caller on a new connection', async (_, leave) => {
    const counters = await nextIsClean(leave);
    expect(counters).toMatchObject({ opened: 2 });
    expect(counters.retired).toBeGreaterThanOrEqual(1);
  });

  it('raw plain commands and CLIENT reads leave nothing: no command beyond their own', async () => {
    const pool = new ConnectionPool(redisConnector(URL), { name: 'redis-raw', maxSize: 1, minSize: 1, logger: quiet });
    await pool.warmup();
    let port = 0;
    await pool.use((c) => void (port = c.stream.localPort ?? 0));
    const monitor = await monitorRedis(() => port);
    await sleep(50);
    for (let i = 0; i < 5; i++) {
      await pool.use((c) => c.call('INCR', `${KEY}:raw`));
      await pool.use((c) => loose(c).send_command('get', `${KEY}:raw`));
      await pool.use((c) => c.call('CLIENT', 'ID'));
      await pool.use((c) => c.call('XREAD', 'STREAMS', `${KEY}:raw-stream`, '0'));
    }
    await sleep(100);
    monitor.stop();
    expect(monitor.seen.length).toBe(20);
    expect(pool.stats().counters).toMatchObject({ resets: 0, retired: 0 });
    await pool.close();
  });
});

describe('Redis connectors: a create that fails says why in the server’s words', () => {
  const user = `nsp-gate-${process.pid}`;
  beforeAll(() => observer.call('ACL', 'SETUSER', user, 'on', '>right-secret', '~*', '+@all'));
  afterAll(() => observer.call('ACL', 'DELUSER', user));

  it.each([
    ['a wrong password', `redis://${user}:wrong-secret@127.0.0.1:6379/0`, /WRONGPASS/],
    ['a closed port', 'redis://127.0.0.1:1/0', /ECONNREFUSED/],
    ['a database the server does not have', 'redis://127.0.0.1:6379/99', /DB index is out of range/],
  ])('%s: the create fails with the client’s own error, scrubbed', async (_, url, why) => {
    for (const make of [redisConnector, sharedRedisConnector]) {
      const pool = new ConnectionPool(make(url), {
        name: 'redis-refused',
        maxSize: 1,
        logger: quiet,
        acquireTimeoutMs: 300,
      });
      const err = (await pool.use((c) => c.set(`${KEY}:never`, 'x')).catch((e: unknown) => e)) as Error;
      expect(err).toBeInstanceOf(Error);
      const lastError = String(pool.stats().lastError);
      expect(lastError).toMatch(why);
      expect(lastError).not.toMatch(/Connection is closed/);
      expect(lastError).not.toContain('wrong-secret');
      expect(pool.stats().counters.opened).toBe(0);
      await pool.close();
    }
    expect(await observer.exists(`${KEY}:never`)).toBe(0); // db 99 refused: nothing landed in db 0
  });

  it('the right password opens, and the client stays in its own database', async () => {
    const pool = new ConnectionPool(redisConnector(`redis://${user}:right-secret@127.0.0.1:6379/3`), {
      name: 'redis-auth',
      maxSize: 1,
      logger: quiet,
    });
    expect(await pool.use(infoOf)).toMatchObject({ db: '3', user });
    await pool.close();
    await until(async () => !String(await observer.client('LIST')).includes(`user=${user}`));
  });
});
