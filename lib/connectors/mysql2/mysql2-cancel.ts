// A statement still running on a connection the pool closes (retired for a hung reset) would go
// on at the server, holding its locks, and mysql2's end() would wait behind it. The close first
// kills the statement, `KILL QUERY <thread id>` from a connection of its own, bounded in time.
import mysql from 'mysql2/promise';
import { wireState } from './mysql2-session.js';

/** How long a cancel may take before the close goes on without it. */
export const KILL_TIMEOUT_MS = 2_000;

/** What the connector reads of mysql2's connection to tell a statement running, when it does not follow the wire. */
interface Core {
  _command?: unknown;
  _commands?: { length: number };
}

/** Whether `conn` runs or queues a command: closing it would leave that to run on at the server. */
export function hasStatementRunning(conn: mysql.Connection): boolean {
  const followed = wireState(conn);
  if (followed !== undefined) return followed.running > 0;
  const core = (conn as unknown as { connection?: Core }).connection;
  return (core?._command !== null && core?._command !== undefined) || (core?._commands?.length ?? 0) > 0;
}

/**
 * Kills what `conn`'s thread runs now from a new connection made with `config` (the thread
 * itself stays, its statement fails): resolves once the server has done it, rejects if that
 * could not be done within `timeoutMs`. Best effort: the statement may have ended already.
 */
export async function killStatement(
  conn: mysql.Connection,
  config: string | mysql.ConnectionOptions,
  timeoutMs = KILL_TIMEOUT_MS,
): Promise<void> {
  const thread = conn.threadId;
  if (typeof thread !== 'number') throw new Error('the connection has no thread id to kill a statement of');
  let killer: mysql.Connection | undefined;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`KILL QUERY did not end within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  const kill = (async () => {
    killer = await (typeof config === 'string'
      ? mysql.createConnection(config)
      : mysql.createConnection({ ...config, connectTimeout: timeoutMs }));
    killer.on('error', () => {});
    await killer.query('KILL QUERY ?', [thread]);
  })();
  kill.catch(() => {}); // when the timer wins, the kill's own failure has no one to tell
  try {
    await Promise.race([kill, late]);
  } finally {
    clearTimeout(timer);
    const k = killer as mysql.Connection | undefined;
    if (k !== undefined) await k.end().catch(() => k.destroy());
    else
      void kill.then(
        () => (killer as mysql.Connection | undefined)?.destroy(),
        () => {},
      );
  }
}
