import { scrub, scrubbedCause } from './scrub.js';

/** The logging the pool does: Nest's `Logger` and `console` both fit. */
export interface PoolLogger {
  debug?(message: string): void;
  /** Good news worth a line (a pool recovered). Optional: without it, such lines go to `warn`. */
  info?(message: string): void;
  warn(message: string): void;
  error(message: string, cause?: unknown): void;
}

/** Default logger: info, warnings and errors to the console, debug dropped. */
export const consoleLogger: PoolLogger = {
  info: (message) => console.info(message),
  warn: (message) => console.warn(message),
  error: (message, cause) => console.error(message, cause),
};

const kScrubbing = Symbol('scrubbing');

/** `logger` with every message and cause scrubbed before it gets them (wrapping once, however often asked). */
export function scrubbingLogger(logger: PoolLogger): PoolLogger {
  if ((logger as { [kScrubbing]?: true })[kScrubbing]) return logger;
  const wrapped: PoolLogger & { [kScrubbing]: true } = {
    [kScrubbing]: true,
    warn: (message) => logger.warn(scrub(message)),
    error: (message, cause) =>
      cause === undefined ? logger.error(scrub(message)) : logger.error(scrub(message), scrubbedCause(cause)),
  };
  if (typeof logger.info === 'function') wrapped.info = (message) => logger.info!(scrub(message));
  if (typeof logger.debug === 'function') wrapped.debug = (message) => logger.debug!(scrub(message));
  return wrapped;
}
