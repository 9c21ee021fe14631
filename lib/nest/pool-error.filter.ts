import { Catch, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import {
  CapacityExceededError,
  ConnectionFailedError,
  ConnectionsExhaustedError,
  KeyLimitError,
  PoolClosedError,
  PoolError,
  QueueFullError,
  scrub,
} from '../core/index.js';

/** How one pool error is answered over HTTP. */
export interface PoolErrorResponse {
  status: number;
  /** Seconds for the `Retry-After` header, when the caller may retry. */
  retryAfterSeconds?: number;
  body: {
    statusCode: number;
    error: string;
    /** The error's stable code, e.g. `KEY_LIMIT`. */
    code: string;
    pool: string;
    /** The error's message, credentials hidden (see `scrub`). */
    message: string;
  };
}

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/**
 * The HTTP answer to a pool error: 429 for a per-key limit, 503 when the pool or the global
 * limit has no room (or cannot connect, or is shutting down), both with `Retry-After`; 500 with a
 * JSON body for the rest, which are bugs (`PoolContextError`, `PoolConfigError`).
 */
export function poolErrorResponse(error: PoolError): PoolErrorResponse {
  let status = 500;
  let retryAfterSeconds: number | undefined;
  if (error instanceof KeyLimitError) {
    status = 429;
    retryAfterSeconds = seconds(error.retryAfterMs);
  } else if (error instanceof CapacityExceededError || error instanceof QueueFullError) {
    status = 503;
    retryAfterSeconds = seconds(error.retryAfterMs);
  } else if (
    error instanceof ConnectionsExhaustedError ||
    error instanceof ConnectionFailedError ||
    error instanceof PoolClosedError
  ) {
    status = 503;
    retryAfterSeconds = 1;
  }
  const reason =
    { 429: 'Too Many Requests', 503: 'Service Unavailable' }[status as 429 | 503] ?? 'Internal Server Error';
  return {
    status,
    retryAfterSeconds,
    body: { statusCode: status, error: reason, code: error.code, pool: error.pool, message: scrub(error.message) },
  };
}

/**
 * Answers pool errors on HTTP (Express or Fastify) as {@link poolErrorResponse} says. Register it
 * with `PoolModule.forRoot({ httpErrors: true })`, `@UseFilters(PoolErrorFilter)`, or
 * `app.useGlobalFilters(new PoolErrorFilter(app.get(HttpAdapterHost)))`. Other transports get
 * the error unchanged.
 */
@Catch(PoolError)
export class PoolErrorFilter implements ExceptionFilter<PoolError> {
  readonly #logger = new Logger('PoolErrorFilter');

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: PoolError, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw error;
    const { httpAdapter } = this.adapterHost;
    const response: unknown = host.switchToHttp().getResponse();
    if (httpAdapter.isHeadersSent(response)) {
      httpAdapter.end(response);
      return;
    }
    const { status, retryAfterSeconds, body } = poolErrorResponse(error);
    if (status === 500)
      this.#logger.error(scrub(error.message), error.stack === undefined ? undefined : scrub(error.stack));
    if (retryAfterSeconds !== undefined) httpAdapter.setHeader(response, 'Retry-After', String(retryAfterSeconds));
    httpAdapter.reply(response, body, status);
  }
}
