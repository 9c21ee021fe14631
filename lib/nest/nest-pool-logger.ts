import { Logger } from '@nestjs/common';
import type { PoolLogger } from '../core/index.js';

/** Routes a pool's logging to Nest's `Logger`, with `pool:<name>` as the context. */
export class NestPoolLogger implements PoolLogger {
  readonly #logger: Logger;

  constructor(pool: string) {
    this.#logger = new Logger(`pool:${pool}`);
  }

  debug(message: string): void {
    this.#logger.debug(message);
  }

  info(message: string): void {
    this.#logger.log(message);
  }

  warn(message: string): void {
    this.#logger.warn(message);
  }

  error(message: string, cause?: unknown): void {
    if (cause instanceof Error && cause.stack !== undefined) this.#logger.error(message, cause.stack);
    else this.#logger.error(message);
  }
}
