/** The logging the pool does: Nest's `Logger` and `console` both fit. */
export interface PoolLogger {
  debug?(message: string): void;
  warn(message: string): void;
  error(message: string, cause?: unknown): void;
}

/** Default logger: warnings and errors to the console, debug dropped. */
export const consoleLogger: PoolLogger = {
  warn: (message) => console.warn(message),
  error: (message, cause) => console.error(message, cause),
};
