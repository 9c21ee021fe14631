// A handle dies with its lease, for every ready-made connector on its real server: a caller that
// kept what use() gave it (a late callback, a task left running, a field of a service) and calls
// it after the call returned runs nothing, is told so (LeaseEndedError: a rejected promise for a
// method that answers with one, through the callback when there is one, else thrown), and never
// touches the next holder's work; the listeners it added leave with it.
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import amqp, { type Channel, type ChannelModel } from 'amqplib';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import pg from 'pg';
import {
  ConnectionPool,
  Http2SessionConnector,
  LeaseEndedError,
  PoolConfigError,
  type Connector,
  type PoolLogger,
} from '../../lib/index.js';
import { amqpConnector } from '../../lib/connectors/amqp/index.js';
import { redisConnector, sharedRedisConnector } from '../../lib/connectors/ioredis/index.js';
import { mysql2Connector } from '../../lib/connectors/mysql2/index.js';
import { pgConnector } from '../../lib/connectors/pg/index.js';
import { sleep, until } from '../support/wait.js';

const PG_URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
const MYSQL = { host: '127.0.0.1', port: 3306, user: 'root', database: 'test' };
const REDIS_URL = 'redis://127.0.0.1:6379/0';
const AMQP_URL = 'amqp://guest:guest@127.0.0.1:5672';
const TAG = `nsp_handles_${process.pid}`;
const quiet: PoolLogger = { warn: () => {}, error: () => {} };

/** What the caller kept of its lease, and the pool it came from. */
async function kept<T>(pool: ConnectionPool<T>): Promise<T> {
  let held!: T;
  await pool.use((conn) => void (held = conn));
  return held;
}

describe('pgConnector: a client kept past its use() runs nothing on the next holder', () => {
  let observer: pg.Client;
  beforeAll(async () => {
    observer = new pg.Client(PG_URL);
    await observer.connect();
    await observer.query(`CREATE TABLE IF NOT EXISTS ${TAG} (who text NOT NULL)`);
  });
  afterAll(async () => {
    await observer.query(`DROP TABLE IF EXISTS ${TAG}`);
    await observer.end();
  });

  it("a stale insert is refused while the next holder's transaction runs, which commits only its own row", async () => {
    const pool = new ConnectionPool(pgConnector(PG_URL), { name: 'pg-handles', maxSize: 1, logger: quiet });
    const stale = await kept(pool);
    await pool.use(async (client) => {
      await client.query('BEGIN');
      await client.query(`INSERT INTO ${TAG} VALUES ('next')`);
      const refused = stale.query(`INSERT INTO ${TAG} VALUES ('stale')`);
      await expect(refused).rejects.toBeInstanceOf(LeaseEndedError);
      await expect(refused).rejects.toThrow(/query\(\) on a connection whose lease has ended/);
      await client.query('COMMIT');
    });
    const { rows } = await observer.query<{ who: string }>(`SELECT who FROM ${TAG} ORDER BY who`);
    expect(rows.map((r) => r.who)).toEqual(['next']);
    await pool.close();
  });

  it('a callback query is answered through its callback; reads still work; instanceof holds', async () => {
    const pool = new ConnectionPool(pgConnector(PG_URL), { name: 'pg-handles', maxSize: 1, logger: quiet });
    const stale = await kept(pool);
    const told = await new Promise<unknown>((resolve) => {
      const returned = stale.query('SELECT 1', (err: Error) => resolve(err));
      expect(returned).toBeUndefined();
    });
    expect(told).toBeInstanceOf(LeaseEndedError);
    expect(stale).toBeInstanceOf(pg.Client);
    expect(typeof (stale as unknown as { processID: unknown }).processID).toBe('number'); // a read touches nothing
    expect(() => ((stale as unknown as { x: number }).x = 1)).toThrow(LeaseEndedError);
    await pool.close();
  });

  it('a listener the holder added leaves with its lease; the next holder hears its own', async () => {
    const pool = new ConnectionPool(pgConnector(PG_URL), { name: 'pg-handles', maxSize: 1, logger: quiet });
    const heardByStale: string[] = [];
    const heardByNext: string[] = [];
    await pool.use((client) => {
      expect(client.on('notice', (n) => heardByStale.push(String(n.message)))).toBe(client); // chained: the handle
    });
    await pool.use(async (client) => {
      client.on('notice', (n) => heardByNext.push(String(n.message)));
      await client.query(`DO $$ BEGIN RAISE NOTICE 'for the next holder'; END $$`);
    });
    expect(heardByNext).toEqual(['for the next holder']);
    expect(heardByStale).toEqual([]);
    await pool.close();
  });

  it('a stale handle cannot redefine, delete or re-prototype what the next holder uses, nor listen again', async () => {
    const pool = new ConnectionPool(pgConnector(PG_URL), { name: 'pg-handles', maxSize: 1, logger: quiet });
    const stale = await kept(pool);
    const hijack = async () => ({ rows: [{ x: 'HIJACKED' }] });
    expect(() => Object.defineProperty(stale, 'query', { value: hijack })).toThrow(LeaseEndedError);
    expect(() => delete (stale as unknown as { connection?: unknown }).connection).toThrow(LeaseEndedError);
    expect(() => Object.setPrototypeOf(stale, {})).toThrow(LeaseEndedError);
    const heard: unknown[] = [];
    expect(() => stale.on('notice', (n) => heard.push(n))).toThrow(LeaseEndedError);
    expect(() => stale.off('error', () => {})).toThrow(LeaseEndedError);
    expect((await pool.use((client) => client.query('SELECT 1 AS x'))).rows).toEqual([{ x: 1 }]);
    expect(heard).toEqual([]);
    expect(pool.stats().counters).toMatchObject({ retired: 0 });
    await pool.close();
  });

  it("a holder takes off only the listeners it added: the pool's own stay, so a killed backend is retired, not a crash", async () => {
    const pool = new ConnectionPool(pgConnector(PG_URL), { name: 'pg-handles', maxSize: 1, logger: quiet });
    let pid = 0;
    await pool.use(async (client) => {
      const mine = () => {};
      client.on('error', mine);
      for (const listener of client.listeners('error')) client.off('error', listener as (...a: unknown[]) => void);
      client.removeAllListeners('end');
      pid = (client as unknown as { processID: number }).processID;
    });
    await observer.query('SELECT pg_terminate_backend($1)', [pid]);
    await until(() => pool.stats().counters.retired === 1, 3_000);
    expect((await pool.use((client) => client.query('SELECT 2 AS x'))).rows).toEqual([{ x: 2 }]);
    await pool.close();
  });

  it('inside one lease the handle is one object: the argument, pool.current and lease.connection', async () => {
    const pool = new ConnectionPool(pgConnector(PG_URL), { name: 'pg-handles', maxSize: 1, logger: quiet });
    await pool.use((client) => {
      expect(pool.current).toBe(client);
    });
    const lease = await pool.acquire();
    expect(lease.connection).toBe(lease.connection);
    expect((await lease.connection.query('SELECT 1 AS n')).rows).toEqual([{ n: 1 }]);
    lease.release();
    expect(() => lease.connection.escapeLiteral('x')).toThrow(LeaseEndedError);
    await pool.close();
  });

  it('lendsHandles: false lends the client itself, as before: the same object lease after lease', async () => {
    const connector: Connector<pg.Client> = { ...pgConnector(PG_URL), lendsHandles: false };
    const pool = new ConnectionPool(connector, { name: 'pg-raw', maxSize: 1, logger: quiet });
    const first = await kept(pool);
    expect(await kept(pool)).toBe(first);
    await expect(first.query('SELECT 1')).resolves.toBeDefined(); // the old behaviour, kept on request
    await pool.close();
  });

  it('a lendsHandles that is neither a boolean nor a lending is refused when the pool is made', () => {
    const connector = { ...pgConnector(PG_URL), lendsHandles: 'yes' } as unknown as Connector<pg.Client>;
    expect(() => new ConnectionPool(connector, { name: 'pg-bad' })).toThrow(PoolConfigError);
    expect(() => new ConnectionPool(connector, { name: 'pg-bad' })).toThrow(/connector\.lendsHandles/);
  });
});

describe('mysql2Connector: a connection kept past its use() runs nothing on the next holder', () => {
  let observer: mysql.Connection;
  beforeAll(async () => {
    observer = await mysql.createConnection(MYSQL);
    await observer.query(`CREATE TABLE IF NOT EXISTS ${TAG} (who varchar(10) NOT NULL) ENGINE=InnoDB`);
  });
  afterAll(async () => {
    await observer.query(`DROP TABLE IF EXISTS ${TAG}`);
    await observer.end();
  });

  it("a stale query and execute are refused inside the next holder's transaction", async () => {
    const pool = new ConnectionPool(mysql2Connector(MYSQL), { name: 'mysql-handles', maxSize: 1, logger: quiet });
    const stale = await kept(pool);
    await pool.use(async (conn) => {
      await conn.query('START TRANSACTION');
      await conn.query(`INSERT INTO ${TAG} VALUES ('next')`);
      await expect(stale.query(`INSERT INTO ${TAG} VALUES ('stale')`)).rejects.toBeInstanceOf(LeaseEndedError);
      await expect(stale.execute(`INSERT INTO ${TAG} VALUES (?)`, ['stale'])).rejects.toBeInstanceOf(LeaseEndedError);
      await expect(stale.query('ROLLBACK')).rejects.toBeInstanceOf(LeaseEndedError); // nor end the holder's transaction
      await conn.query('COMMIT');
    });
    const [rows] = await observer.query<mysql.RowDataPacket[]>(`SELECT who FROM ${TAG}`);
    expect(rows.map((r) => r.who)).toEqual(['next']);
    await pool.close();
  });
});

describe('ioredis connectors: a client kept past its use() sends nothing', () => {
  let observer: Redis;
  beforeAll(() => void (observer = new Redis(REDIS_URL)));
  afterAll(async () => {
    await observer.del(`${TAG}:stale`, `${TAG}:next`);
    await observer.quit();
    observer.disconnect();
  });

  it('redisConnector: a stale SET rejects and writes nothing; a stale pipeline() throws at once', async () => {
    const pool = new ConnectionPool(redisConnector(REDIS_URL), { name: 'redis-handles', maxSize: 1, logger: quiet });
    const stale = await kept(pool);
    await pool.use(async (client) => {
      await expect(stale.set(`${TAG}:stale`, '1')).rejects.toBeInstanceOf(LeaseEndedError);
      expect(() => stale.pipeline()).toThrow(LeaseEndedError);
      expect(() => stale.multi()).toThrow(LeaseEndedError);
      await expect(stale.call('SELECT', 3)).rejects.toBeInstanceOf(LeaseEndedError); // the holder stays in its database
      expect(() => stale.scanStream()).toThrow(LeaseEndedError); // a stream, not a promise left to reject unseen
      const told = await new Promise((resolve) => void stale.get(`${TAG}:next`, (err) => resolve(err)));
      expect(told).toBeInstanceOf(LeaseEndedError);
      await client.set(`${TAG}:next`, 'yes');
    });
    expect(await observer.get(`${TAG}:stale`)).toBeNull();
    expect(await observer.get(`${TAG}:next`)).toBe('yes');
    expect(pool.stats().counters).toMatchObject({ resets: 0, retired: 0 });
    await pool.close();
  });

  it("redisConnector: a pipeline made during a lease and sent after it sends nothing into the next holder's database", async () => {
    const pool = new ConnectionPool(redisConnector(REDIS_URL), { name: 'redis-handles', maxSize: 1, logger: quiet });
    let later!: ReturnType<Redis['pipeline']>;
    let transaction!: ReturnType<Redis['multi']>;
    await pool.use((client) => {
      later = client.pipeline().set(`${TAG}:stale`, 'piped');
      transaction = client.multi().set(`${TAG}:stale`, 'multi');
    });
    await pool.use(async (client) => {
      await client.select(9);
      await expect(later.exec()).rejects.toBeInstanceOf(LeaseEndedError);
      await expect(transaction.exec()).rejects.toBeInstanceOf(LeaseEndedError);
      expect(await client.get(`${TAG}:stale`)).toBeNull();
    });
    expect(await observer.get(`${TAG}:stale`)).toBeNull();
    // Made and sent within one lease, both still work.
    expect(await pool.use((client) => client.pipeline().set(`${TAG}:next`, 'p').get(`${TAG}:next`).exec())).toEqual([
      [null, 'OK'],
      [null, 'p'],
    ]);
    await pool.close();
  });

  it('sharedRedisConnector: each lease has its handle on the one client; a stale one is refused, the live ones work', async () => {
    const pool = new ConnectionPool(sharedRedisConnector(REDIS_URL), { name: 'redis-shared-handles', logger: quiet });
    const stale = await kept(pool);
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        pool.use(async (client) => {
          expect(client).not.toBe(stale);
          return client.incr(`${TAG}:next:${i}`);
        }),
      ),
    );
    expect(replies).toEqual(Array(20).fill(1));
    await expect(stale.get(`${TAG}:next:0`)).rejects.toBeInstanceOf(LeaseEndedError);
    expect(pool.stats().counters.opened).toBe(1);
    // No holder may cut the others off, or move their keys under another prefix.
    await pool.use((client) => {
      expect(() => client.disconnect()).toThrow(/disconnect\(\) is not for a holder/);
      expect(() => ((client.options as { keyPrefix?: string }).keyPrefix = 'evil:')).toThrow(TypeError);
    });
    expect(await pool.use((client) => client.incr(`${TAG}:next:0`))).toBe(2);
    await observer.del(...Array.from({ length: 20 }, (_, i) => `${TAG}:next:${i}`));
    await pool.close();
  });
});

describe('amqpConnector: a channel kept past its use() publishes nothing', () => {
  const queue = `nsp.handles.${process.pid}`;
  let admin: ChannelModel;
  let observer: Channel;
  beforeAll(async () => {
    admin = await amqp.connect(AMQP_URL);
    observer = await admin.createChannel();
    await observer.assertQueue(queue, { durable: false, autoDelete: false });
  });
  afterAll(async () => {
    await observer.deleteQueue(queue);
    await admin.close();
  });

  it('a stale sendToQueue throws and sends nothing; a stale round trip rejects', async () => {
    const pool = new ConnectionPool(amqpConnector(AMQP_URL), { name: 'amqp-handles', maxSize: 1, logger: quiet });
    const stale = await kept(pool);
    expect(() => stale.sendToQueue(queue, Buffer.from('stale'))).toThrow(LeaseEndedError);
    await expect(stale.checkQueue(queue)).rejects.toBeInstanceOf(LeaseEndedError);
    const delivered: unknown[] = [];
    await expect(stale.consume(queue, (m) => delivered.push(m))).rejects.toBeInstanceOf(LeaseEndedError); // not told as a message
    await pool.use((channel) => void channel.sendToQueue(queue, Buffer.from('next')));
    await sleep(100);
    const bodies: string[] = [];
    for (
      let m = await observer.get(queue, { noAck: true });
      m !== false;
      m = await observer.get(queue, { noAck: true })
    )
      bodies.push(m.content.toString());
    expect(bodies).toEqual(['next']);
    expect(delivered).toEqual([]);
    await pool.close();
  });
});

describe('Http2SessionConnector: a session kept past its use() opens no stream', () => {
  it('a stale request() throws and the server sees none', async () => {
    const server = http2.createServer();
    const paths: string[] = [];
    server.on('stream', (stream, headers) => {
      paths.push(String(headers[':path']));
      stream.respond({ ':status': 200 });
      stream.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const pool = new ConnectionPool(new Http2SessionConnector(origin), { name: 'h2-handles', logger: quiet });
    try {
      const stale = await kept(pool);
      await pool.use(
        (session) =>
          new Promise<void>((resolve, reject) => {
            const req = session.request({ ':path': '/next' });
            req.on('error', reject).on('end', resolve).resume();
            req.end();
          }),
      );
      expect(() => stale.request({ ':path': '/stale' })).toThrow(LeaseEndedError);
      expect(paths).toEqual(['/next']);
    } finally {
      await pool.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
