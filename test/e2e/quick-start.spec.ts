import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Logger, type INestApplication } from '@nestjs/common';
import { once } from 'node:events';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { readmeBlocks, source } from '../support/readme.js';

describe('the README Nest quick start (sample-app/quick-start)', () => {
  it('shows every quick-start file verbatim', () => {
    const blocks = readmeBlocks().filter((b) => b.file.startsWith('sample-app/quick-start/') && !b.excerpt);
    expect(blocks.map((b) => b.file)).toEqual([
      'sample-app/quick-start/app.module.ts',
      'sample-app/quick-start/catalog.ts',
      'sample-app/quick-start/health.controller.ts',
      'sample-app/quick-start/main.ts',
    ]);
    for (const { file, code } of blocks) expect(code).toBe(source(file));
  });

  describe('running', () => {
    let upstream: http2.Http2Server;
    let app: INestApplication;
    let base: string;

    beforeAll(async () => {
      upstream = http2.createServer((req, res) => res.end(`item at ${req.url}`));
      upstream.listen(0, '127.0.0.1');
      await once(upstream, 'listening');
      process.env.UPSTREAM_URL = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
      process.env.PORT = '0';
      Logger.overrideLogger(false);
      const { bootstrap } = await import('../../sample-app/quick-start/main.js');
      app = await bootstrap();
      base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    });

    afterAll(async () => {
      await app?.close();
      upstream.close();
      Logger.overrideLogger(['log', 'error', 'warn', 'debug', 'verbose']);
      delete process.env.UPSTREAM_URL;
      delete process.env.PORT;
    });

    it('serves pooled calls over one warm HTTP/2 session and reports it healthy', async () => {
      const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => fetch(`${base}/catalog/${i}`)));
      const bodies = await Promise.all(responses.map((r) => r.json()));
      expect(bodies[7]).toEqual({ id: '7', body: 'item at /items/7' });
      expect(responses.every((r) => r.status === 200)).toBe(true);

      const health = await fetch(`${base}/health`);
      expect(health.status).toBe(200);
      const upstreamPool = {
        health: 'healthy',
        size: 1,
        ready: 1,
        maxSize: 4,
        clients: 0,
        clientLimit: 100,
        utilization: 0,
        waiting: 0,
        lastError: null,
      };
      const up = { pools: { status: 'up', upstream: upstreamPool } };
      expect(await health.json()).toEqual({ status: 'ok', info: up, error: {}, details: up });
      const live = await fetch(`${base}/health/live`);
      expect({ status: live.status, body: await live.json() }).toEqual({
        status: 200,
        body: { status: 'ok', info: up, error: {}, details: up },
      });
    });
  });
});
