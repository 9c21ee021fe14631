// A call the admission limits refuse is handed elsewhere instead of failing (`onRefused` on
// @UsePooled): the docs' recipe, which queues it on @nestjs/bullmq, run on a real Redis and a real
// HTTP/2 upstream; and the rules of the hand-off (only refusals, only before the method ran).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { BullModule, getQueueToken } from '@nestjs/bullmq';
import { Injectable, Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import type { Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';
import {
  CapacityExceededError,
  Http2SessionConnector,
  isRefusal,
  KeyLimitError,
  PoolModule,
  type RefusalError,
  retryAfterOf,
  UsePooled,
} from '../../lib/index.js';
import { startCloudUpstream, type CloudUpstream } from '../../sample-app/cloud-upstream.js';
import { type Answer, CompletionWorker, Completions } from '../../sample-app/refused-to-queue.js';
import { FakeConnector } from '../support/fake-connector.js';
import { RecordingNestLogger } from '../support/nest.js';
import { until } from '../support/wait.js';

describe('handing refused calls to a BullMQ queue (the recipe)', () => {
  let upstream: CloudUpstream;
  let moduleRef: TestingModule;
  let queue: Queue;

  beforeAll(async () => {
    upstream = await startCloudUpstream({ handshakeDelayMs: 10, responseDelayMs: 150 });
    moduleRef = await Test.createTestingModule({
      imports: [
        PoolModule.forRoot({
          limits: { global: 2, perKey: 1, retryAfterMs: 100 },
          pools: [{ name: 'llm', connector: new Http2SessionConnector(upstream.url) }],
        }),
        BullModule.forRoot({ connection: { host: '127.0.0.1', port: 6379 }, prefix: `refused-${randomUUID()}` }),
        BullModule.registerQueue({ name: 'completions' }),
      ],
      providers: [Completions, CompletionWorker],
    })
      .setLogger(new RecordingNestLogger())
      .compile();
    await moduleRef.init();
    queue = moduleRef.get<Queue>(getQueueToken('completions'));
  });

  afterAll(async () => {
    await queue?.obliterate({ force: true });
    await moduleRef?.close();
    await upstream?.close();
  });

  it('answers what the limits admit, queues what they refuse, and the worker completes every queued call', async () => {
    const completions = moduleRef.get(Completions);
    // Six users at once on a global limit of 2, and a seventh call from ann, over her own limit of 1.
    const users = ['ann', 'bob', 'cy', 'dee', 'eve', 'fay', 'ann'];
    const answers: Answer[] = await Promise.all(users.map((u) => completions.complete(u, 'hello')));
    const served = answers.filter((a): a is { text: string } => 'text' in a);
    const queued = answers.filter((a): a is { queued: string } => 'queued' in a);
    expect(served).toHaveLength(2);
    expect(queued).toHaveLength(5);
    for (const a of served) expect(a.text).toContain('/complete?user=');
    // Every queued call ran later through the worker, under the same limits, and none was lost.
    const results = new Map<string, string>();
    await until(async () => {
      for (const { queued: id } of queued) {
        const job = await queue.getJob(id);
        if ((await job?.isCompleted()) === true) results.set(id, job!.returnvalue as string);
      }
      return results.size === queued.length;
    }, 20_000);
    const queuedUsers = users.filter((_, i) => 'queued' in answers[i]!);
    expect(queuedUsers.map((u, i) => results.get(queued[i]!.queued)?.includes(`/complete?user=${u}`))).toEqual(
      queuedUsers.map(() => true),
    );
    expect(await queue.getFailedCount()).toBe(0);
  }, 30_000);
});

describe('onRefused', () => {
  const handedOff: { error: RefusalError; args: unknown[] }[] = [];

  @Injectable()
  class Service {
    /** Stays in its scope until `release` is called. */
    release!: () => void;

    @UsePooled('api', { onRefused: 'instead' })
    async hold(label: string): Promise<string> {
      await new Promise<void>((r) => (this.release = r));
      return label;
    }

    @UsePooled('api', {
      onRefused(this: Service, error: RefusalError, label: string) {
        handedOff.push({ error, args: [label] });
        return `later:${label}`;
      },
    })
    async quick(label: string): Promise<string> {
      return label;
    }

    /** Refused inside, by another pool: the method had begun, so the error is thrown as it is. */
    @UsePooled('api', { onRefused: 'instead', propagation: 'new' })
    async nested(): Promise<string> {
      return this.other();
    }

    @UsePooled('full')
    async other(): Promise<string> {
      return 'other';
    }

    releaseFull: (() => void) | undefined;

    @UsePooled('full')
    async holdFull(): Promise<void> {
      await new Promise<void>((r) => (this.releaseFull = r));
    }

    @UsePooled('api', { onRefused: 'instead' })
    async failing(): Promise<string> {
      throw new Error('the body failed');
    }

    instead(error: RefusalError, label?: string): string {
      handedOff.push({ error, args: [label] });
      return `instead:${label ?? ''}`;
    }
  }

  let moduleRef: TestingModule;
  beforeAll(async () => {
    @Module({
      imports: [
        PoolModule.forRoot({
          limits: { global: 1, perKey: 1 },
          pools: [
            { name: 'api', connector: new FakeConnector(), options: { clientLimit: 10 } },
            { name: 'full', connector: new FakeConnector(), options: { limits: { global: 1 } } },
          ],
        }),
      ],
      providers: [Service],
    })
    class AppModule {}
    moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .setLogger(new RecordingNestLogger())
      .compile();
    await moduleRef.init();
  });
  afterAll(async () => {
    await moduleRef?.close();
  });

  it('hands a refused call to the method it names or the function it gives, with the error and the arguments', async () => {
    const service = moduleRef.get(Service);
    handedOff.length = 0;
    const held = service.hold('first');
    await until(() => service.release !== undefined);
    await expect(service.hold('second')).resolves.toBe('instead:second');
    await expect(service.quick('third')).resolves.toBe('later:third');
    expect(handedOff.map((h) => h.args)).toEqual([['second'], ['third']]);
    expect(handedOff[0]!.error).toBeInstanceOf(CapacityExceededError);
    expect(isRefusal(handedOff[0]!.error)).toBe(true);
    expect(retryAfterOf(handedOff[0]!.error)).toBe(1_000);
    service.release();
    await expect(held).resolves.toBe('first');
  });

  it('throws what is not a refusal, and a refusal met once the method began', async () => {
    const service = moduleRef.get(Service);
    handedOff.length = 0;
    await expect(service.failing()).rejects.toThrow('the body failed');
    // 'full' has a global limit of 1: hold it, then a nested call on it is refused inside nested().
    const holding = service.holdFull();
    await until(() => service.releaseFull !== undefined);
    await expect(service.nested()).rejects.toBeInstanceOf(CapacityExceededError);
    service.releaseFull!();
    await holding;
    expect(handedOff).toEqual([]);
    expect(isRefusal(new KeyLimitError('p', 'k', 1, 10))).toBe(true);
    expect(isRefusal(new Error('x'))).toBe(false);
  });

  it('is checked when decorated', () => {
    const declare = (onRefused: unknown, streams = false) => {
      class Bad {
        async m(): Promise<void> {}
        async *g(): AsyncGenerator<number> {}
      }
      const name = streams ? 'g' : 'm';
      UsePooled('api', { onRefused: onRefused as string })(
        Bad.prototype,
        name,
        Object.getOwnPropertyDescriptor(Bad.prototype, name)!,
      );
    };
    expect(() => declare('nope')).toThrow(`@UsePooled('api') on Bad.m: onRefused names no method of the class: "nope"`);
    expect(() => declare(5)).toThrow(
      'onRefused must be the name of a method of the class, or a function (error, ...args), got 5',
    );
    expect(() => declare('m', true)).toThrow('onRefused is only for methods that return a promise: this one streams');
  });
});
