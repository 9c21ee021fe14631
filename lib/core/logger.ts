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
