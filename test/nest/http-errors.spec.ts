import { describe, expect, it } from '@jest/globals';
import { Controller, Get, UseFilters, type ArgumentsHost } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import {
  CapacityExceededError,
  ConnectionFailedError,
  ConnectionsExhaustedError,
  KeyLimitError,
  PoolClosedError,
  PoolContextError,
  PoolErrorFilter,
  poolErrorResponse,
  QueueFullError,
  type PoolStats,
} from '../../lib/index.js';
import { RecordingNestLogger } from '../support/nest.js';

describe('poolErrorResponse', () => {
  it('answers a per-key limit with 429 and Retry-After in whole seconds, rounded up', () => {
    expect(poolErrorResponse(new KeyLimitError('api', 'user:ann', 5, 1_200))).toEqual({
      status: 429,
      retryAfterSeconds: 2,
      body: {
        statusCode: 429,
        error: 'Too Many Requests',
        code: 'KEY_LIMIT',
        pool: 'api',
        message: 'pool "api": key "user:ann" already holds its limit of 5 concurrent leases; retry later',
      },
    });
  });

  it('answers the global limit, exhaustion, a full queue, failing connects and shutdown with 503 and Retry-After', () => {
    const cases = [
      [new CapacityExceededError('api', 1000, 250), 1, 'CAPACITY_EXCEEDED'],
      [new CapacityExceededError('api', 1000, 4_001), 5, 'CAPACITY_EXCEEDED'],
      [new ConnectionsExhaustedError('api', 'all-busy', 100, {} as PoolStats), 1, 'CONNECTIONS_EXHAUSTED'],
      [new QueueFullError('api', 10), 1, 'QUEUE_FULL'],
      [new ConnectionFailedError('api', 'connect ECONNREFUSED'), 1, 'CONNECTION_FAILED'],
      [new PoolClosedError('api'), 1, 'POOL_CLOSED'],
    ] as const;
    for (const [error, seconds, code] of cases) {
      expect(poolErrorResponse(error)).toEqual({
        status: 503,
        retryAfterSeconds: seconds,
        body: { statusCode: 503, error: 'Service Unavailable', code, pool: 'api', message: error.message },
      });
    }
  });

  it('answers a misuse with a JSON 500 that names the pool, never a bare one', () => {
    expect(poolErrorResponse(new PoolContextError('api'))).toEqual({
      status: 500,
      retryAfterSeconds: undefined,
      body: {
        statusCode: 500,
        error: 'Internal Server Error',
        code: 'POOL_CONTEXT',
        pool: 'api',
        message: new PoolContextError('api').message,
      },
    });
  });
});

describe('PoolErrorFilter', () => {
  it('passes errors of other transports on unchanged', () => {
    const filter = new PoolErrorFilter({} as HttpAdapterHost);
    const error = new PoolClosedError('api');
    expect(() => filter.catch(error, { getType: () => 'rpc' } as unknown as ArgumentsHost)).toThrow(error);
  });
});

describe('PoolErrorFilter without httpErrors', () => {
  @Controller()
  class ClosedController {
    @Get('filtered')
    @UseFilters(PoolErrorFilter)
    filtered(): never {
      throw new PoolClosedError('db');
    }

    @Get('unfiltered')
    unfiltered(): never {
      throw new PoolClosedError('db');
    }
  }

  it('maps errors of the routes it is put on with @UseFilters', async () => {
    const moduleRef = await Test.createTestingModule({ controllers: [ClosedController] })
      .setLogger(new RecordingNestLogger())
      .compile();
    const app = moduleRef.createNestApplication();
    await app.listen(0, '127.0.0.1');
    try {
      const base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
      const filtered = await fetch(`${base}/filtered`);
      expect(filtered.status).toBe(503);
      expect(filtered.headers.get('retry-after')).toBe('1');
      expect(await filtered.json()).toMatchObject({ code: 'POOL_CLOSED', pool: 'db' });
      expect((await fetch(`${base}/unfiltered`)).status).toBe(500);
    } finally {
      await app.close();
    }
  });
});
