// Priority classes taken from the request (`requestClass`) and from a method's own `class`, over
// real HTTP: with the global limit reached, a premium user's call is served before the waiting
// batch calls, and a method's class wins over the request's.
import { afterEach, describe, expect, it } from '@jest/globals';
import { Controller, Get, Injectable, Module, Param, type INestApplication } from '@nestjs/common';
import { ExpressAdapter } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import {
  currentRequestClass,
  getPoolToken,
  PoolModule,
  UsePooled,
  type ConnectionPool,
  type RequestClassFn,
} from '../../lib/index.js';
import { FakeConnector } from '../support/fake-connector.js';
import { RecordingNestLogger } from '../support/nest.js';
import { Gate } from '../support/gate.js';
import { until } from '../support/wait.js';

const gate = new Gate();
/** The calls in the order they were admitted: who asked, with what class. */
const admitted: string[] = [];

@Injectable()
class Work {
  /** The request's class (or the limiter's default). */
  @UsePooled('llm')
  async ask(who: string): Promise<string | undefined> {
    admitted.push(who);
    await gate.promise;
    return currentRequestClass();
  }

  /** Always batch, whoever asks. */
  @UsePooled('llm', { class: 'batch' })
  async report(who: string): Promise<string> {
    admitted.push(who);
    await gate.promise;
    return 'report';
  }

  /** The class from the arguments. */
  @UsePooled('llm', { class: (urgent: unknown) => (urgent === 'urgent' ? 'live' : undefined) })
  async triage(urgent: string, who: string): Promise<string> {
    admitted.push(who);
    await gate.promise;
    return urgent;
  }
}

@Controller()
class WorkController {
  constructor(private readonly work: Work) {}

  @Get('ask/:who')
  ask(@Param('who') who: string) {
    return this.work.ask(who).then((cls) => ({ cls: cls ?? null }));
  }

  @Get('report/:who')
  report(@Param('who') who: string) {
    return this.work.report(who).then((r) => ({ r }));
  }

  @Get('triage/:urgent/:who')
  triage(@Param('urgent') urgent: string, @Param('who') who: string) {
    return this.work.triage(urgent, who).then((t) => ({ t }));
  }
}

type Request = { headers: Record<string, string | undefined> };
const byPlan: RequestClassFn = (context) =>
  context.switchToHttp().getRequest<Request>().headers['x-plan'] === 'pro' ? 'live' : undefined;

describe('priority classes from the request', () => {
  let app: INestApplication;
  let base: string;
  let pool: ConnectionPool<unknown>;

  async function start(requestClass: RequestClassFn = byPlan): Promise<void> {
    @Module({
      imports: [
        PoolModule.forRoot({
          httpErrors: true,
          requestClass,
          limits: { global: 1, classes: [{ name: 'live', share: 0.5 }, { name: 'batch' }] },
          pools: [{ name: 'llm', connector: new FakeConnector(), options: { clientLimit: 100 } }],
        }),
      ],
      providers: [Work],
      controllers: [WorkController],
    })
    class AppModule {}
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .setLogger(new RecordingNestLogger())
      .compile();
    app = moduleRef.createNestApplication(new ExpressAdapter());
    await app.listen(0, '127.0.0.1');
    base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    pool = app.get(getPoolToken('llm'));
    admitted.length = 0;
  }

  const get = async (path: string, plan?: string) => {
    const res = await fetch(`${base}${path}`, { headers: plan === undefined ? {} : { 'x-plan': plan } });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const waitingIn = () => pool.stats().admission!.classes!.map((c) => c.waiting);

  afterEach(async () => {
    gate.open();
    await app?.close();
  });

  it("serves a premium request's call before batch calls that waited longer", async () => {
    await start();
    const first = get('/ask/first');
    await until(() => admitted.length === 1);
    const batch = get('/ask/free');
    await until(() => waitingIn()[1] === 1);
    const pro = get('/ask/pro', 'pro');
    await until(() => waitingIn()[0] === 1);
    gate.open(); // first ends: its slot goes to the live class
    await until(() => admitted.length === 2);
    gate.open();
    await until(() => admitted.length === 3);
    gate.open();
    expect(admitted).toEqual(['first', 'pro', 'free']);
    await expect(pro).resolves.toEqual({ status: 200, body: { cls: 'live' } });
    await expect(batch).resolves.toEqual({ status: 200, body: { cls: null } });
    await expect(first).resolves.toMatchObject({ status: 200 });
  });

  it("lets a method's own class win over the request's, and read the arguments", async () => {
    await start();
    const first = get('/ask/first', 'pro');
    await until(() => admitted.length === 1);
    const report = get('/report/pro-report', 'pro'); // batch, though the request is pro's
    await until(() => waitingIn()[1] === 1);
    const urgent = get('/triage/urgent/urgent-free'); // live, from the arguments
    await until(() => waitingIn()[0] === 1);
    for (let n = 2; n <= 3; n++) {
      gate.open();
      await until(() => admitted.length === n);
    }
    gate.open();
    expect(admitted).toEqual(['first', 'urgent-free', 'pro-report']);
    await Promise.all([first, report, urgent]);
  });

  it('answers a class the limiter does not have with a 500 that names the classes, serving nothing', async () => {
    await start(() => 'gold');
    await expect(get('/ask/x')).resolves.toMatchObject({
      status: 500,
      body: {
        code: 'POOL_CONFIG',
        message: `pool "llm": option "acquire.class" ("gold") is not a class of the limiter "limits": one of 'live', 'batch'`,
      },
    });
    expect(pool.stats().counters.acquired).toBe(0);
  });

  it('refuses a requestClass that returns something other than a class', async () => {
    await start(() => 3 as never);
    await expect(get('/ask/x')).resolves.toMatchObject({
      status: 500,
      body: {
        message:
          'PoolModule.forRoot: option "requestClass" must return a non-empty string, or undefined for a request without a class; got 3',
      },
    });
  });

  it('checks class and requestClass at registration', () => {
    const pools = [{ name: 'llm', connector: new FakeConnector() }];
    expect(() => PoolModule.forRoot({ pools, requestClass: 'live' as never })).toThrow(
      'PoolModule.forRoot: option "requestClass" must be a function, got "live"',
    );
    expect(() => PoolModule.forFeature(pools, { requestClass: byPlan } as never)).toThrow(
      'PoolModule.forFeature: option "requestClass" is set once per application',
    );
    expect(() => {
      class Bad {
        @UsePooled('llm', { class: '' })
        async m(): Promise<void> {}
      }
      return Bad;
    }).toThrow("@UsePooled('llm') on Bad.m: class must be a non-empty string, got an empty string");
    expect(() => UsePooled('llm', { class: 5 as never })({}, 'm', { value: () => undefined })).toThrow(
      "@UsePooled('llm') on Object.m: class must be a class name (a non-empty string), or a function of the method's arguments, got 5",
    );
  });
});
