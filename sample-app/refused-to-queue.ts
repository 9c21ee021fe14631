// The recipe of docs/nest.md, "When admission refuses": a call the limits refuse is handed to a
// BullMQ queue (@nestjs/bullmq) instead of failing, and a worker runs it when there is room.
// test/e2e/refused-to-queue.spec.ts runs it on a real Redis.
import { InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import type { ClientHttp2Session } from 'node:http2';
import { type ConnectionPool, InjectPool, type RefusalError, retryAfterOf, UsePooled } from 'nestjs-shared-pool';
import { http2Request } from 'nestjs-shared-pool/connectors';

/** What a call answers: the completion, or where the work went. */
export type Answer = { text: string } | { queued: string };

@Injectable()
export class Completions {
  constructor(
    @InjectPool('llm') private readonly llm: ConnectionPool<ClientHttp2Session>,
    @InjectQueue('completions') private readonly queue: Queue,
  ) {}

  /** Refused by the limits (429/503 otherwise): queued, to run once the limit has room. */
  @UsePooled('llm', { key: (userId: string) => userId, onRefused: 'later' })
  async complete(userId: string, prompt: string): Promise<Answer> {
    return { text: await this.ask(userId, prompt) };
  }

  /** `onRefused`: the error, then the method's arguments. Its answer is the method's. */
  async later(error: RefusalError, userId: string, prompt: string): Promise<Answer> {
    const job = await this.queue.add(
      'complete',
      { userId, prompt },
      { delay: retryAfterOf(error), attempts: 5, backoff: { type: 'exponential', delay: retryAfterOf(error) } },
    );
    return { queued: job.id! };
  }

  /** The worker's way in: refused again, it throws, and BullMQ retries the job (its attempts and backoff). */
  @UsePooled('llm', { key: (userId: string) => userId })
  async completeQueued(userId: string, prompt: string): Promise<string> {
    return this.ask(userId, prompt);
  }

  /** The call itself, on the scope's connection. */
  private async ask(userId: string, prompt: string): Promise<string> {
    const res = await http2Request(
      this.llm.current,
      { ':method': 'POST', ':path': `/complete?user=${userId}` },
      prompt,
    );
    return res.body.toString();
  }
}

@Processor('completions')
export class CompletionWorker extends WorkerHost {
  constructor(private readonly completions: Completions) {
    super();
  }

  /** Runs a queued completion: its result is the job's. */
  async process(job: Job<{ userId: string; prompt: string }>): Promise<string> {
    return this.completions.completeQueued(job.data.userId, job.data.prompt);
  }
}
