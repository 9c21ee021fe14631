// The AMQP connector against the real RabbitMQ: callers share few connections, each call on its
// own channel, never more channels on a connection than agreed; a channel the broker closes is
// retired alone, a cut connection retires its channels, and the pool serves on.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import amqp, { type ChannelModel } from 'amqplib';
import { ConnectionPool, PoolConfigError, type PoolLogger } from '../../lib/index.js';
import { amqpConnector } from '../../lib/connectors/amqp/index.js';
import { throughOutage } from '../support/connector-runs.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { until } from '../support/wait.js';

const QUEUE = `nsp.amqp-connector.${process.pid}`;
const quiet: PoolLogger = { warn: () => {}, error: () => {} };

let proxy: TcpProxy;
let admin: ChannelModel;

beforeAll(async () => {
  proxy = await TcpProxy.start({ host: '127.0.0.1', port: 5672 });
  admin = await amqp.connect('amqp://guest:guest@127.0.0.1:5672');
  const ch = await admin.createChannel();
  await ch.assertQueue(QUEUE, { durable: false, autoDelete: false });
  await ch.purgeQueue(QUEUE);
  await ch.close();
});

afterAll(async () => {
  const ch = await admin.createChannel();
  await ch.deleteQueue(QUEUE);
  await ch.close();
  await admin.close();
  await proxy.close();
});

const url = () => `amqp://guest:guest@127.0.0.1:${proxy.port}`;

describe('amqpConnector', () => {
  it('200 concurrent publishes, each on its own channel, over one connection; every message arrives', async () => {
    const pool = new ConnectionPool(amqpConnector(url(), { confirm: true }), {
      name: 'amqp',
      maxSize: 20,
      logger: quiet,
    });
    await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        pool.use(async (channel) => {
          channel.sendToQueue(QUEUE, Buffer.from(String(i)));
          await channel.waitForConfirms();
        }),
      ),
    );
    expect(proxy.sessions).toBe(1);
    expect(pool.stats().size).toBeLessThanOrEqual(20);
    const got = await pool.use(async (channel) => {
      const bodies: number[] = [];
      for (
        let m = await channel.get(QUEUE, { noAck: true });
        m !== false;
        m = await channel.get(QUEUE, { noAck: true })
      )
        bodies.push(Number(m.content.toString()));
      return bodies;
    });
    expect(got.sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    await pool.close();
    await until(() => proxy.sessions === 0);
  });

  it('never more channels on a connection than agreed: 12 channels at 5 a connection open 3 connections', async () => {
    const pool = new ConnectionPool(amqpConnector(url(), { channelsPerConnection: 5 }), {
      name: 'amqp-limit',
      maxSize: 12,
      logger: quiet,
    });
    const leases = await Promise.all(Array.from({ length: 12 }, () => pool.acquire()));
    expect(new Set(leases.map((l) => l.connection)).size).toBe(12);
    expect(proxy.sessions).toBe(3);
    for (const l of leases) l.release();
    await pool.close();
    await until(() => proxy.sessions === 0);
  });

  it("the broker's channel_max bounds it too", async () => {
    const pool = new ConnectionPool(amqpConnector(`${url()}?channelMax=4`), {
      name: 'amqp-max',
      maxSize: 8,
      logger: quiet,
    });
    const leases = await Promise.all(Array.from({ length: 8 }, () => pool.acquire()));
    expect(proxy.sessions).toBe(2);
    for (const l of leases) l.release();
    await pool.close();
    await until(() => proxy.sessions === 0);
  });

  it('a channel the broker closes (404) is retired alone; the connection and the other channels serve on', async () => {
    const pool = new ConnectionPool(amqpConnector(url()), { name: 'amqp-404', maxSize: 3, minSize: 3, logger: quiet });
    await pool.warmup();
    await expect(pool.use((channel) => channel.checkQueue(`${QUEUE}.does-not-exist`))).rejects.toThrow(/NOT_FOUND/);
    await until(() => pool.stats().counters.retired === 1);
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => pool.use((channel) => channel.checkQueue(QUEUE).then((q) => q.queue))),
    );
    expect(answers).toEqual(Array(10).fill(QUEUE));
    expect(proxy.sessions).toBe(1);
    await pool.close();
    await until(() => proxy.sessions === 0);
  });

  it('a channel left with a consumer is retired, never handed to the next caller', async () => {
    const pool = new ConnectionPool(amqpConnector(url()), { name: 'amqp-consumer', maxSize: 1, logger: quiet });
    const first = await pool.use(async (channel) => {
      await channel.consume(QUEUE, () => {});
      return channel;
    });
    const second = await pool.use(async (channel) => channel);
    expect(second).not.toBe(first);
    expect(pool.stats()).toMatchObject({
      lastError: expect.stringMatching(/given back with 1 consumer\(s\) on it/),
      counters: { resetFailures: 1, retiredBy: { reset: 1 } },
    });
    await pool.close();
    await until(() => proxy.sessions === 0);
  });

  it('a cut connection retires its channels; callers are served again once the broker is back', async () => {
    const pool = new ConnectionPool(amqpConnector(url()), {
      name: 'amqp-cut',
      maxSize: 4,
      minSize: 2,
      logger: quiet,
      acquireTimeoutMs: 3_000,
      createTimeoutMs: 1_000,
      maxCreateBackoffMs: 500,
    });
    try {
      await pool.warmup();
      await throughOutage(
        proxy,
        () => pool.use((channel) => channel.checkQueue(QUEUE), { retry: { attempts: 3, baseDelayMs: 20 } }),
        { workers: 6 },
      );
      expect(pool.stats().counters.retired).toBeGreaterThanOrEqual(2);
      expect(pool.stats()).toMatchObject({ clients: 0, waiting: 0 });
    } finally {
      await pool.close();
      await until(() => proxy.sessions === 0);
    }
  });

  it('bad arguments are refused, saying what to change', () => {
    expect(() => amqpConnector(url(), { channelsPerConnection: 0 })).toThrow(PoolConfigError);
    expect(() => amqpConnector(url(), { confim: true } as never)).toThrow(/did you mean "confirm"/);
    expect(() => amqpConnector(3 as unknown as string)).toThrow(
      /must be an amqp:\/\/ URL \(amqps:\/\/ for TLS\) or amqplib connect options, got 3/,
    );
  });
});
