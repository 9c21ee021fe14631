import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { Controller, Get, Inject, Module, Param, type INestApplication, type LoggerService } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { request } from 'node:http';
import { inspect } from 'node:util';
import {
  getPoolToken,
  PoolHealthIndicator,
  PoolModule,
  type ConnectionPool,
  type Connector,
  type PoolGroup,
} from '../../lib/index.js';
import { PoolDashboardModule } from '../../lib/dashboard/index.js';
import { amqpConnector } from 'nestjs-shared-pool/connectors/amqp';
import { redisConnector } from 'nestjs-shared-pool/connectors/ioredis';
import { mysql2Connector } from 'nestjs-shared-pool/connectors/mysql2';
import { pgConnector } from 'nestjs-shared-pool/connectors/pg';
import { CREDENTIAL_FORMS, SECRET } from '../support/credential-forms.js';
import { openSse } from '../support/sse.js';

/** A connector whose every create fails with `text` in its error (and in the error's cause). */
const failing = (text: string): Connector<never> => ({
  clientLimit: 1,
  create: async () => Promise.reject(new Error(text, { cause: new Error(`driver: ${text}`) })),
  close: async () => {},
});

/** The shipped connectors, each given the secret and failing for real against this machine's services. */
const SHIPPED: Record<string, () => Connector<unknown>> = {
  pg: () => pgConnector(`postgres://app:${encodeURIComponent(SECRET)}@127.0.0.1:1/test`) as Connector<unknown>,
  mysql2: () =>
    mysql2Connector({
      host: '127.0.0.1',
      port: 3306,
      user: 'nobody',
      password: SECRET,
      database: 'test',
    }) as Connector<unknown>,
  ioredis: () =>
    redisConnector({
      host: '127.0.0.1',
      port: 6379,
      username: 'nobody',
      password: SECRET,
      maxRetriesPerRequest: 0,
    }) as Connector<unknown>,
  amqp: () => amqpConnector(`amqp://guest:${encodeURIComponent(SECRET)}@127.0.0.1:5672`) as Connector<unknown>,
};

// The first also warms up (minSize: 1): its failure is logged at start-up.
const formPools = CREDENTIAL_FORMS.map((form, i) => ({
  name: `form${i}`,
  connector: failing(form.text(SECRET)),
  options: { minSize: i === 0 ? 1 : 0, maxSize: 1, acquireTimeoutMs: 300, createTimeoutMs: 2_000 },
}));
const shippedPools = Object.entries(SHIPPED).map(([name, make]) => ({
  name,
  connector: make(),
  options: { maxSize: 1, acquireTimeoutMs: 3_000, createTimeoutMs: 2_000 },
}));

/** Every byte any logger was given, however it was called. */
class EveryLine implements LoggerService {
  readonly text: string[] = [];
  #keep(level: string, args: unknown[]): void {
    this.text.push(`${level} ${args.map((a) => (typeof a === 'string' ? a : inspect(a, { depth: 8 }))).join(' ')}`);
  }
  log(...args: unknown[]) {
    this.#keep('log', args);
  }
  error(...args: unknown[]) {
    this.#keep('error', args);
  }
  warn(...args: unknown[]) {
    this.#keep('warn', args);
  }
  debug(...args: unknown[]) {
    this.#keep('debug', args);
  }
  verbose(...args: unknown[]) {
    this.#keep('verbose', args);
  }
  fatal(...args: unknown[]) {
    this.#keep('fatal', args);
  }
}

@Controller()
class Probe {
  constructor(
    @Inject(ModuleRef) private readonly refs: ModuleRef,
    private readonly health: HealthCheckService,
    private readonly pools: PoolHealthIndicator,
  ) {}

  @Get('call/:name')
  call(@Param('name') name: string) {
    return this.refs.get<ConnectionPool<unknown>>(getPoolToken(name), { strict: false }).use(() => 'never');
  }

  @Get('tenant/:key')
  tenant(@Param('key') key: string) {
    return this.refs.get<PoolGroup<unknown>>(getPoolToken('tenants'), { strict: false }).use(key, () => 'never');
  }

  @Get('health')
  @HealthCheck()
  check() {
    return this.health.check([() => this.pools.isHealthy('pools')]);
  }
}

@Module({
  imports: [
    TerminusModule,
    PoolModule.forRoot({
      httpErrors: true,
      pools: [...formPools, ...shippedPools],
      groups: [
        {
          name: 'tenants',
          connector: (key: string) => failing(`tenant ${key}: postgres://t:${SECRET}@db/${key} PGPASSWORD=${SECRET}`),
          options: { maxTotal: 2, member: { acquireTimeoutMs: 300 } },
        },
      ],
    }),
    PoolDashboardModule.forRoot({ intervalMs: 100 }),
  ],
  controllers: [Probe],
})
class App {}

function get(base: string, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { agent: false }, (res) => {
      let text = `${res.statusCode} ${JSON.stringify(res.headers)}\n`;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('no secret leaves the process', () => {
  const logs = new EveryLine();
  const printed: string[] = [];
  let app: INestApplication;
  let base: string;

  beforeAll(async () => {
    for (const stream of [process.stdout, process.stderr]) {
      const write = stream.write.bind(stream);
      jest.spyOn(stream, 'write').mockImplementation(((chunk: unknown, ...rest: never[]) => {
        printed.push(String(chunk));
        return write(chunk as string, ...rest);
      }) as typeof stream.write);
    }
    const moduleRef = await Test.createTestingModule({ imports: [App] })
      .setLogger(logs)
      .compile();
    app = moduleRef.createNestApplication(new ExpressAdapter(), { logger: logs });
    await app.listen(0, '127.0.0.1');
    base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  });

  afterAll(async () => {
    await app.close();
    jest.restoreAllMocks();
  });

  it('through the error filter, /health, the dashboard and the logs, for every form and every shipped connector', async () => {
    const served: string[] = [];
    const names = [...formPools, ...shippedPools].map((p) => p.name);
    // Each pool fails its creates; its caller gets the error filter's answer.
    served.push(...(await Promise.all(names.map((name) => get(base, `/call/${name}`)))));
    served.push(await get(base, '/tenant/acme'), await get(base, '/tenant/globex'));
    names.forEach((name, i) => expect(`${name}: ${served[i]!.slice(0, 3)}`).toBe(`${name}: 503`));
    // What the pools remember of it, as every viewer sees it.
    served.push(await get(base, '/health'), await get(base, '/pools/ui/snapshot'));
    const stream = await openSse(`${base}/pools/ui/stream`);
    await stream.next(1, 5_000);
    served.push(...stream.events.map((e) => e.data));
    stream.close();
    const all = [...served, ...logs.text, ...printed].join('\n');
    expect(logs.text.some((line) => line.includes('could not open its minSize connections'))).toBe(true);
    // The pools did fail with the forms' texts: they are there, scrubbed.
    expect(all).toContain('***');
    for (const name of names)
      expect(served.find((s) => s.startsWith('200') && s.includes('"lastError"'))).toContain(`"${name}"`);
    expect(all).not.toContain(SECRET);
    expect(all).not.toContain(encodeURIComponent(SECRET));
    expect(all).not.toContain('pa55');
    // Every pool's last error is shown, and shown scrubbed, not blanked.
    const health = JSON.parse(served[names.length + 2]!.slice(served[names.length + 2]!.indexOf('\n') + 1)) as {
      details: { pools: Record<string, { lastError: string | null }> };
    };
    for (const name of [...names.filter((n) => n.startsWith('form')), 'tenants'])
      expect(health.details.pools[name]!.lastError).toMatch(/\*\*\*/);
  }, 60_000);
});
