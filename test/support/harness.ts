import { expect } from '@jest/globals';
import { ConnectionPool, PoolConfigError, type PoolLogger, type PoolOptions } from '../../lib/index.js';
import { FakeConnector } from './fake-connector.js';
import { VirtualClock } from './virtual-clock.js';

/** The PoolConfigError `fn` throws (the test fails if it throws anything else, or nothing). */
export function configError(fn: () => unknown): PoolConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(PoolConfigError);
    return err as PoolConfigError;
  }
  throw new Error('expected a PoolConfigError');
}

/** A logger that keeps what it was told. */
export class RecordingLogger implements PoolLogger {
  readonly warnings: string[] = [];
  readonly errors: string[] = [];
  readonly debugs: string[] = [];
  readonly infos: string[] = [];
  debug(message: string): void {
    this.debugs.push(message);
  }
  info(message: string): void {
    this.infos.push(message);
  }
  warn(message: string): void {
    this.warnings.push(message);
  }
  error(message: string): void {
    this.errors.push(message);
  }
}

/** A pool on a fake connector and virtual time, with a recording logger. */
export function makePool(options: PoolOptions = {}, connector = new FakeConnector()) {
  const clock = new VirtualClock();
  const logger = new RecordingLogger();
  const pool = new ConnectionPool(connector, { name: 'test', clock, logger, lifetimeJitter: 0, ...options });
  return { pool, connector, clock, logger };
}

/** Records a promise's outcome without ever leaving it unhandled. */
export function track<V>(promise: Promise<V>) {
  const state: { settled: boolean; value?: V; error?: unknown } = { settled: false };
  promise.then(
    (value) => Object.assign(state, { settled: true, value }),
    (error: unknown) => Object.assign(state, { settled: true, error }),
  );
  return state;
}
