// What an AMQP channel carries to the next caller, against the real RabbitMQ: deliveries left
// unacknowledged go back to their queue, a prefetch is set back, a channel in tx mode, with its
// flow stopped or with a call still waiting is retired; a clean return costs nothing; a cold pool
// opens no more channels on a connection than its channel_max, while it connects too.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import amqp, { type Channel, type ChannelModel } from 'amqplib';
import { ConnectionPool, type PoolLogger } from '../../lib/index.js';
import { amqpConnector } from '../../lib/connectors/amqp/index.js';
import { sleep, until } from '../support/wait.js';

const URL = 'amqp://guest:guest@127.0.0.1:5672';
const QUEUE = `nsp.amqp-state.${process.pid}`;
const quiet: PoolLogger = { warn: () => {}, error: () => {} };
/** AMQP's tx.select and channel.flow, as amqplib numbers them (it has no method for either). */
const TX_SELECT = [(90 << 16) | 10, (90 << 16) | 11] as const;
const CHANNEL_FLOW = [(20 << 16) | 20, (20 << 16) | 21] as const;
type Raw = Channel & { rpc(method: number, fields: object, expect: number): Promise<unknown> };

let admin: ChannelModel;
let observer: Channel;

beforeAll(async () => {
  admin = await amqp.connect(URL);
  observer = await admin.createChannel();
  await observer.assertQueue(QUEUE, { durable: false, autoDelete: false });
});

beforeEach(() => observer.purgeQueue(QUEUE));

afterAll(async () => {
  await observer.deleteQueue(QUEUE);
  await admin.close();
});

/** Every message the queue holds now, taken and acknowledged by the observer. */
async function drain(): Promise<string[]> {
  const bodies: string[] = [];
  for (let m = await observer.get(QUEUE, { noAck: true }); m !== false; m = await observer.get(QUEUE, { noAck: true }))
    bodies.push(m.content.toString());
  return bodies;
}

function onePool() {
  return new ConnectionPool(amqpConnector(URL), { name: 'amqp-state', maxSize: 1, logger: quiet });
}

describe('amqpConnector: the next caller gets a clean channel', () => {
  it('a message taken with get() and never acknowledged goes back to its queue at once, redelivered', async () => {
    const pool = onePool();
    observer.sendToQueue(QUEUE, Buffer.from('held'));
    await until(async () => (await observer.checkQueue(QUEUE)).messageCount === 1);
    expect(await pool.use(async (ch) => (await ch.get(QUEUE)) !== false)).toBe(true);
    const again = await (async () => {
      for (let i = 0; i < 50; i++) {
        const m = await observer.get(QUEUE, { noAck: true });
        if (m !== false) return m;
        await sleep(20);
      }
      return false;
    })();
    expect(again !== false && again.content.toString()).toBe('held');
    expect(again !== false && again.fields.redelivered).toBe(true);
    expect(pool.stats().counters).toMatchObject({ retired: 0, resets: 0 }); // a nack, which the broker does not answer
    await pool.close();
  });

  it('deliveries of a consumer cancelled before their ack go back too; those acknowledged do not', async () => {
    const pool = onePool();
    for (const body of ['a', 'b', 'c']) observer.sendToQueue(QUEUE, Buffer.from(body));
    await pool.use(async (ch) => {
      const got: amqp.ConsumeMessage[] = [];
      const { consumerTag } = await ch.consume(QUEUE, (m) => m && got.push(m), { noAck: false });
      await until(() => got.length === 3);
      ch.ack(got[0]!); // 'a' acknowledged, 'b' and 'c' left
      await ch.cancel(consumerTag);
    });
    await until(async () => (await observer.checkQueue(QUEUE)).messageCount === 2);
    expect((await drain()).sort()).toEqual(['b', 'c']);
    await pool.close();
  });

  it('ack with allUpTo and ackAll() settle what they cover: nothing comes back', async () => {
    const pool = onePool();
    for (const body of ['1', '2', '3', '4']) observer.sendToQueue(QUEUE, Buffer.from(body));
    await until(async () => (await observer.checkQueue(QUEUE)).messageCount === 4);
    await pool.use(async (ch) => {
      await ch.get(QUEUE);
      const second = await ch.get(QUEUE);
      if (second !== false) ch.ack(second, true); // 1 and 2
    });
    await pool.use(async (ch) => {
      await ch.get(QUEUE);
      await ch.get(QUEUE);
      ch.ackAll();
    });
    await sleep(100);
    expect(await drain()).toEqual([]);
    await pool.close();
  });

  it.each([
    ['per consumer', false],
    ['per channel (global)', true],
  ])('a prefetch (%s) is set back: the next consumer is not throttled', async (_, global) => {
    const pool = onePool();
    await pool.use((ch) => ch.prefetch(1, global));
    for (let i = 0; i < 5; i++) observer.sendToQueue(QUEUE, Buffer.from(String(i)));
    const delivered = await pool.use(async (ch) => {
      const got: amqp.ConsumeMessage[] = [];
      const { consumerTag } = await ch.consume(QUEUE, (m) => m && got.push(m), { noAck: false });
      await sleep(200);
      const n = got.length;
      await ch.cancel(consumerTag);
      ch.ackAll();
      return n;
    });
    expect(delivered).toBe(5);
    expect(pool.stats().counters).toMatchObject({ resets: 1, retired: 0 });
    await pool.close();
  });

  it('a channel left in tx mode is retired: its uncommitted publish is dropped, the next caller’s arrives', async () => {
    const pool = onePool();
    await pool.use(async (ch) => {
      await (ch as Raw).rpc(TX_SELECT[0], {}, TX_SELECT[1]);
      ch.sendToQueue(QUEUE, Buffer.from('uncommitted'));
    });
    await pool.use(async (ch) => {
      ch.sendToQueue(QUEUE, Buffer.from('next'));
      await ch.checkQueue(QUEUE); // a round trip: the publish is at the broker
    });
    await until(async () => (await observer.checkQueue(QUEUE)).messageCount === 1);
    expect(await drain()).toEqual(['next']);
    expect(pool.stats().counters.retired).toBe(1);
    expect(String(pool.stats().lastError)).toMatch(/tx mode/);
    await pool.close();
  });

  it('a channel whose flow was stopped, or with a call still waiting, is retired; the next caller is served', async () => {
    const pool = onePool();
    await pool.use((ch) => (ch as Raw).rpc(CHANNEL_FLOW[0], { active: false }, CHANNEL_FLOW[1]).catch(() => {}));
    await pool.use((ch) => void ch.get(QUEUE).catch(() => {}));
    observer.sendToQueue(QUEUE, Buffer.from('served'));
    await until(async () => (await observer.checkQueue(QUEUE)).messageCount === 1);
    const got = await pool.use(async (ch) => {
      const m = await ch.get(QUEUE, { noAck: true });
      return m === false ? null : m.content.toString();
    });
    expect(got).toBe('served');
    expect(pool.stats().counters.retired).toBe(2);
    await pool.close();
  });

  it('callers that leave nothing cost nothing: no reset runs', async () => {
    const pool = onePool();
    for (let i = 0; i < 10; i++) {
      await pool.use(async (ch) => {
        ch.sendToQueue(QUEUE, Buffer.from(String(i)));
        const m = await ch.get(QUEUE);
        if (m !== false) ch.ack(m);
        await ch.get(QUEUE, { noAck: true });
      });
    }
    expect(pool.stats().counters).toMatchObject({ opened: 1, resets: 0, resetFailures: 0, retired: 0 });
    await pool.close();
  });
});

describe('amqpConnector: channel_max on a cold pool', () => {
  it('seven creates at once on connections of channel_max 2 all succeed, two channels a connection', async () => {
    const pool = new ConnectionPool(amqpConnector(`${URL}?channelMax=2`), {
      name: 'amqp-cold',
      maxSize: 7,
      minSize: 7,
      logger: quiet,
    });
    await pool.warmup();
    const leases = await Promise.all(Array.from({ length: 7 }, () => pool.acquire()));
    const perConnection = new Map<unknown, number>();
    for (const l of leases) {
      const connection = (l.connection as unknown as { connection: unknown }).connection;
      perConnection.set(connection, (perConnection.get(connection) ?? 0) + 1);
    }
    expect(pool.stats().counters).toMatchObject({ opened: 7, createFailures: 0 });
    expect([...perConnection.values()].sort()).toEqual([1, 2, 2, 2]);
    for (const l of leases) l.release();
    await pool.close();
  });
});
