// The connector's calls after a create, each bounded by its timeout: a validate() or close() that
// hangs never holds the pool.
import { messageOf, type PoolLogger, type Timers } from '../common/index.js';

/**
 * Runs `validate(value)` within `timeoutMs`. `done(failure)` is called once: `undefined` when the
 * connection is alive, else why not (returned false, threw, or did not settle in time). Returns a
 * function that ends the check at once as alive (the pool is closing, and waits for no check);
 * if the check then finds the connection dead after all, `lateFailure()` says so (once).
 */
export function validateWithin<T>(
  validate: (value: T) => boolean | void | Promise<boolean | void>,
  value: T,
  timers: Timers,
  timeoutMs: number,
  report: { done: (failure: unknown) => void; lateFailure: () => void },
): () => void {
  let over = false;
  let cut = false;
  const end = (failure: unknown): void => {
    if (over) return;
    over = true;
    timers.clear(timer);
    report.done(failure);
  };
  const timer = timers.set(
    () => end(new Error(`validate() did not settle within validateTimeoutMs (${timeoutMs} ms)`)),
    timeoutMs,
  );
  const settled = (failure: unknown): void => {
    if (cut && failure !== undefined) {
      cut = false;
      report.lateFailure();
    }
    end(failure);
  };
  const check = async () => (await validate(value)) !== false;
  check().then(
    (alive) => settled(alive ? undefined : new Error('validate() returned false')),
    (err: unknown) => settled(err ?? new Error('validate() threw')),
  );
  return () => {
    if (over) return;
    cut = true;
    end(undefined);
  };
}

/**
 * Runs `close(value)`, logging a failure; resolves when it settles or after `timeoutMs`, whichever
 * comes first (with a warning: the pool no longer waits for it). Never rejects.
 */
export function closeWithin<T>(
  close: (value: T) => unknown,
  value: T,
  timers: Timers,
  timeoutMs: number,
  logger: PoolLogger,
  pool: string,
): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = timers.set(() => {
      logger.warn(
        `pool "${pool}": a connection's close() did not settle within closeTimeoutMs (${timeoutMs} ms); no longer waiting for it`,
      );
      resolve();
    }, timeoutMs);
    new Promise<void>((closed) => closed(close(value) as void))
      .catch((err: unknown) => logger.error(`pool "${pool}": closing a connection failed: ${messageOf(err)}`, err))
      .finally(() => {
        timers.clear(timer);
        resolve();
      });
  });
}
