// What the exclusive connector knows of a client from the commands it sent, whatever their
// spelling or path, and the reset that reads it: a WATCH, a MULTI or another database is undone
// at the fewest commands (none when nothing was left); what no command can undo here (a
// subscription, MONITOR, CLIENT settings, HELLO, AUTH, a command still blocking, a close begun)
// retires the client.
import type { Redis } from 'ioredis';
import { effectOf, type SentCommand } from './redis-commands.js';

type SendCommand = (command: SentCommand, ...rest: unknown[]) => unknown;

/** What the connector knows of one client. */
interface Session {
  /** The database the client is configured for, and the one last selected (NaN: unknown). */
  readonly home: number;
  db: number;
  watching: boolean;
  /** A MULTI sent outside a pipeline, not yet ended by EXEC or DISCARD. */
  multi: boolean;
  /** Blocking commands sent and not answered. */
  blocked: number;
  /** Why the connection cannot be made clean by a command, once something made it so. */
  spoiled: string | undefined;
}

const sessions = new WeakMap<Redis, Session>();

/**
 * Whether `client` must be hung up rather than sent QUIT: a blocking command still waits on it
 * (QUIT would wait behind it), or what it was sent may keep QUIT from being answered (CLIENT
 * REPLY OFF, a subscription, MONITOR).
 */
export function mustHangUp(client: Redis): boolean {
  const state = sessions.get(client);
  return state !== undefined && (state.blocked > 0 || state.spoiled !== undefined);
}

/** Follows every command `client` sends, and its own disconnect(), from now on. */
export function followSession(client: Redis): void {
  const home = client.options.db ?? 0;
  const state: Session = { home, db: home, watching: false, multi: false, blocked: 0, spoiled: undefined };
  sessions.set(client, state);
  const send = client.sendCommand.bind(client) as unknown as SendCommand;
  (client as unknown as { sendCommand: SendCommand }).sendCommand = (command, ...rest) => {
    const effect = effectOf(command.name, command.args);
    if (effect !== undefined) follow(state, command, effect);
    return send(command, ...rest);
  };
  const disconnect = client.disconnect.bind(client);
  client.disconnect = (...args: Parameters<Redis['disconnect']>) => {
    state.spoiled ??= 'the client was disconnected by its caller';
    return disconnect(...args);
  };
}

function follow(state: Session, command: SentCommand, effect: NonNullable<ReturnType<typeof effectOf>>): void {
  switch (effect) {
    case 'select': {
      const db = Number(String(command.args[0]));
      state.db = Number.isInteger(db) ? db : Number.NaN;
      return;
    }
    case 'watch':
      state.watching = true;
      return;
    case 'unwatch':
      state.watching = false;
      return;
    case 'multi':
      state.multi = true;
      return;
    case 'exec':
      state.multi = state.watching = false;
      return;
    case 'blocks': {
      state.blocked++;
      const answered = () => void state.blocked--;
      command.promise.then(answered, answered);
      return;
    }
    case 'session':
      state.spoiled ??=
        command.name.toLowerCase() === 'quit'
          ? 'the client was closed by its caller (QUIT)'
          : `${command.name.toUpperCase()} changed the connection past what a reset can undo`;
  }
}

/** Why `client` cannot be made clean for another caller, if it cannot. */
function uncleanable(client: Redis, state: Session | undefined): string | undefined {
  if (state === undefined) return 'the client was not made by redisConnector: its state is unknown';
  if (state.spoiled !== undefined) return state.spoiled;
  if (client.status !== 'ready') return `the client is ${client.status}, not ready`;
  if ((client as unknown as { manuallyClosing?: boolean }).manuallyClosing === true) return 'the client is closing';
  if (client.mode !== 'normal') return `the client was left in ${client.mode} mode`;
  if ((client as unknown as { condition?: { subscriber?: unknown } }).condition?.subscriber)
    return 'the client was left subscribed';
  if (state.blocked > 0) return 'a blocking command was still waiting on the client';
  return undefined;
}

/**
 * Cleans a client given back: a WATCH or a MULTI left open is ended, the client's own database
 * selected again; nothing is sent when there is nothing to clean. A client that cannot be made
 * clean (see {@link uncleanable}) is retired: the reset throws why.
 */
export function resetSession(client: Redis): boolean | Promise<boolean> {
  const state = sessions.get(client);
  const unclean = uncleanable(client, state);
  if (unclean !== undefined || state === undefined) throw new Error(unclean);
  if (!state.multi && !state.watching && state.db === state.home) return true;
  return (async () => {
    if (state.multi)
      await client.discard(); // DISCARD also ends a WATCH
    else if (state.watching) await client.unwatch();
    if (state.db !== state.home) await client.select(state.home);
    return !state.multi && !state.watching && state.db === state.home && state.spoiled === undefined;
  })();
}
