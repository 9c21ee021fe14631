import { Controller, Get, Param, Post } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { InjectPool, UsePooled, type ConnectionPool } from 'nestjs-shared-pool';

/** Counters on Redis, on shared ioredis clients. */
@Controller('counters')
export class CountersController {
  constructor(@InjectPool('redis') private readonly redis: ConnectionPool<Redis>) {}

  @Post(':name')
  @UsePooled('redis')
  async increment(@Param('name') name: string) {
    return { name, value: await this.redis.current.incr(`sample:counter:${name}`) };
  }

  @Get(':name')
  @UsePooled('redis')
  async read(@Param('name') name: string) {
    return { name, value: Number((await this.redis.current.get(`sample:counter:${name}`)) ?? 0) };
  }
}
