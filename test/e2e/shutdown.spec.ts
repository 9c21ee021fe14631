// Shutdown with keep-alive clients: requests in flight are answered, their connections do not
// hold the server open until the keep-alive timeout, and the pools close right after, on
// Express and on Fastify.
import { afterEach, describe, expect, it } from '@jest/globals';
import { Agent, request, type Server } from 'node:http';
import { Controller, Get, Module, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { getPoolToken, PoolModule, UsePooled, type ConnectionPool } from '../../lib/index.js';
import { until } from '../support/wait.js';

/** What happened, in order. */
const events: string[] = [];
let finish: () => void = () => {};

@Controller()
class WorkController {
  @Get('quick')
  quick() {
    return { ok: true };
  }

  @UsePooled('db')
  @Get('slow')
  async slow() {
    await new Promise<void>((resolve) => (finish = resolve));
    events.push('handler done');
    return { ok: true };
  }
}

@Module({
  imports: [
    PoolModule.forRoot({
      pools: [
        {
          name: 'db',
          connector: {
            clientLimit: 10,
            create: async () => ({}),
            close: async () => void events.push('connection closed'),
          },
          options: { minSize: 1 },
        },
      ],
    }),
  ],
  controllers: [WorkController],
})
class AppModule {}

function get(url: string, agent: Agent): Promise<{ status: number; error?: string }> {
  return new Promise((resolve) => {
    const req = request(url, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode! }));
    });
    req.on('error', (err) => resolve({ status: 0, error: err.message }));
    req.end();
  });
}

describe.each([
  ['Express', () => new ExpressAdapter()],
  ['Fastify', () => new FastifyAdapter()],
])('shutdown with a keep-alive client on %s', (_platform, adapter) => {
  let agent: Agent;
  afterEach(() => {
    finish();
    agent.destroy();
  });

  it('answers the request in flight, then closes the server and the pools without waiting for the keep-alive timeout', async () => {
    events.length = 0;
    const app: INestApplication = await NestFactory.create(AppModule, adapter(), { logger: false });
    await app.listen(0, '127.0.0.1');
    // A keep-alive timeout far longer than the test may take: waiting for it would time the test out.
    (app.getHttpServer() as Server).keepAliveTimeout = 120_000;
    const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    const pool = app.get<ConnectionPool<unknown>>(getPoolToken('db'));
    agent = new Agent({ keepAlive: true, maxSockets: 1 });

    expect(await get(`${url}/quick`, agent)).toEqual({ status: 200 }); // the socket is now kept alive
    const inFlight = get(`${url}/slow`, agent); // same socket
    await until(() => pool.stats().clients === 1);
    let closed = false;
    const closing = app.close().then(() => (closed = true));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect([closed, pool.closed]).toEqual([false, false]); // the request is still being handled, with its pool
    finish();
    await expect(inFlight).resolves.toEqual({ status: 200 });
    await closing; // would take the 120 s keep-alive timeout without the drain
    expect(events).toEqual(['handler done', 'connection closed']);
    expect(pool.closed).toBe(true);
    expect(pool.stats().counters).toMatchObject({ acquired: 1, released: 1 });
  }, 10_000);
});
