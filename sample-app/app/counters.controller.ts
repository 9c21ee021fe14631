import { BadRequestException, Body, Controller, Get, Inject, Param, Post, Query } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { InjectPool, UsePooled, type ConnectionPool } from 'nestjs-shared-pool';
import { SharedRedis } from './redis.js';

const counter = (name: string) => `sample:counter:${name}`;
/** The token of the job queue's Redis list (see SampleConfig.jobsKey). */
export const JOBS_KEY = Symbol('JOBS_KEY');

/** Counters on Redis: plain commands on the shared client, a compare-and-reset on a pooled connection. */
@Controller('counters')
export class CountersController {
  constructor(
    private readonly shared: SharedRedis,
    @InjectPool('redis') private readonly redis: ConnectionPool<Redis>,
  ) {}

  @Post(':name')
  async increment(@Param('name') name: string) {
    return { name, value: await this.shared.client.incr(counter(name)) };
  }

  @Get(':name')
  async read(@Param('name') name: string) {
    return { name, value: Number((await this.shared.client.get(counter(name))) ?? 0) };
  }

  /** Resets the counter only if it still holds `expected`: WATCH aborts the MULTI if anyone changed it since. */
  @Post(':name/reset')
  async reset(@Param('name') name: string, @Body() body: { expected?: unknown }) {
    if (typeof body?.expected !== 'number')
      throw new BadRequestException('expected must be a number: { "expected": 3 }');
    return this.resetIf(name, body.expected); // checked before a connection is taken
  }

  @UsePooled('redis') // WATCH state lives on the connection: it must be this call's alone
  private async resetIf(name: string, expected: number) {
    const conn = this.redis.current;
    await conn.watch(counter(name));
    const value = Number((await conn.get(counter(name))) ?? 0);
    if (value !== expected) {
      await conn.unwatch();
      return { name, reset: false, value };
    }
    const done = await conn.multi().set(counter(name), 0).exec(); // null: changed after WATCH
    return { name, reset: done !== null, value: done === null ? value : 0 };
  }
}

/** A job queue on a Redis list: RPUSH on the shared client, a blocking BLPOP on a pooled connection. */
@Controller('jobs')
export class JobsController {
  constructor(
    private readonly shared: SharedRedis,
    @InjectPool('redis') private readonly redis: ConnectionPool<Redis>,
    @Inject(JOBS_KEY) private readonly jobs: string,
  ) {}

  @Post()
  async push(@Body() body: { job?: unknown }) {
    if (typeof body?.job !== 'string' || body.job.length === 0)
      throw new BadRequestException('job must be a non-empty string: { "job": "resize 42" }');
    return { queued: await this.shared.client.rpush(this.jobs, body.job) };
  }

  /** Waits up to `waitMs` for a job. BLPOP blocks its connection that long: on the shared client it would stall every other caller. */
  @Get('next')
  async next(@Query('waitMs') waitMs = '1000') {
    const ms = Number(waitMs);
    if (!Number.isInteger(ms) || ms < 1 || ms > 10_000)
      throw new BadRequestException('waitMs must be a whole number from 1 to 10000');
    return { job: await this.pop(ms) };
  }

  @UsePooled('redis')
  private async pop(ms: number): Promise<string | null> {
    const popped = await this.redis.current.blpop(this.jobs, ms / 1000);
    return popped?.[1] ?? null;
  }
}
