// A statement still running on a connection the pool closes (retired for a hung reset, a reset
// that outlived resetTimeoutMs) would go on at the server, holding its locks, until it ended:
// closing the socket does not stop it. The close first asks the server to cancel it, as libpq's
// PQcancel does: a CancelRequest on a connection of its own, which needs no login and no free
// connection slot.
import { connect, type Socket } from 'node:net';
import type pg from 'pg';

/** What the connector reads of a pg.Client to tell a running statement and cancel it. */
interface Cancellable {
  host?: string;
  port?: number;
  processID?: number | null;
  secretKey?: number | null;
  _activeQuery?: unknown;
  _queryQueue?: unknown[];
}

/** How long a cancel may take before the close goes on without it. */
export const CANCEL_TIMEOUT_MS = 2_000;

/** The protocol's code of a CancelRequest (1234 in the high 16 bits, 5678 in the low). */
const CANCEL_REQUEST_CODE = 80_877_102;

/** Whether `client` has a statement running or queued: closing it would leave that to run on. */
export function hasStatementRunning(client: pg.Client): boolean {
  const c = client as unknown as Cancellable;
  return (c._activeQuery !== null && c._activeQuery !== undefined) || (c._queryQueue?.length ?? 0) > 0;
}

/**
 * Asks the server to cancel what `client`'s backend runs now: resolves once the server has taken
 * the request (it closes the cancel connection), rejects if it could not be sent within
 * `timeoutMs`. Best effort: the server may have finished the statement already.
 */
export function cancelStatement(client: pg.Client, timeoutMs = CANCEL_TIMEOUT_MS): Promise<void> {
  const c = client as unknown as Cancellable;
  const pid = c.processID;
  const key = c.secretKey;
  if (typeof pid !== 'number' || typeof key !== 'number')
    return Promise.reject(new Error('the client has no backend key to cancel with'));
  const host = c.host ?? 'localhost';
  const port = c.port ?? 5432;
  return new Promise<void>((resolve, reject) => {
    const socket: Socket = host.startsWith('/') ? connect(`${host}/.s.PGSQL.${port}`) : connect(port, host);
    const timer = setTimeout(() => fail(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
    let settled = false;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      reject(err);
    };
    socket.once('error', fail);
    socket.once('connect', () => {
      const request = Buffer.alloc(16);
      request.writeInt32BE(16, 0);
      request.writeInt32BE(CANCEL_REQUEST_CODE, 4);
      request.writeInt32BE(pid, 8);
      request.writeInt32BE(key, 12);
      socket.end(request);
    });
    // The server answers a cancel by closing the connection once it has signalled the backend.
    socket.once('close', () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve();
    });
  });
}
