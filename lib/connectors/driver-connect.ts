// What the driver connectors share: their first argument checked, and a connect the pool can abort.
import { optionError, shown } from '../core/index.js';

/** Refuses a first argument `field` (`what` the connector takes) that is neither a string nor an object. */
export function checkTarget(connector: string, field: string, value: unknown, what: string): void {
  if (typeof value === 'string' || (typeof value === 'object' && value !== null)) return;
  throw optionError(
    { subject: 'module', name: connector },
    field,
    `(the first argument) must be ${what}, got ${shown(value)}`,
  );
}

/**
 * Runs `connect()`; the pool's abort (its createTimeoutMs, its close) hangs the client up, as does a
 * failed connect, so no half-open socket is left behind.
 */
export async function connectAbortably(
  signal: AbortSignal,
  connect: () => Promise<unknown>,
  hangUp: () => void,
): Promise<void> {
  signal.addEventListener('abort', hangUp, { once: true });
  try {
    await connect();
  } catch (err) {
    hangUp();
    throw err;
  } finally {
    signal.removeEventListener('abort', hangUp);
  }
}
