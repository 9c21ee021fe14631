// What a Redis command does to the connection it is sent on, whatever its spelling (`select`,
// `SELECT`, `call('SeLeCt', 3)`): the one table both ioredis connectors read, the shared one to
// refuse what would reach every caller, the exclusive one to clean or retire after it.

/** A command as ioredis sends it, as far as the connectors read it. */
export interface SentCommand {
  name: string;
  args: unknown[];
  promise: Promise<unknown>;
  reject(err: Error): void;
}

/**
 * What a command leaves on its connection beyond its reply:
 * - `blocks`: holds the connection until it answers (BLPOP, XREAD BLOCK, WAIT);
 * - `select`: selects another database;
 * - `watch`, `unwatch`: opens or ends a WATCH;
 * - `multi`, `exec`: opens or ends a transaction (EXEC and DISCARD end one, and a WATCH);
 * - `session`: changes the connection for good, past what a command can undo here: a
 *   subscription, MONITOR, a CLIENT setting (its name, REPLY OFF, TRACKING), HELLO, AUTH,
 *   RESET, QUIT, READONLY, replication.
 */
export type ConnectionEffect = 'blocks' | 'select' | 'watch' | 'unwatch' | 'multi' | 'exec' | 'session';

const BLOCKING = [
  'blpop',
  'brpop',
  'brpoplpush',
  'blmove',
  'blmpop',
  'bzpopmin',
  'bzpopmax',
  'bzmpop',
  'wait',
  'waitaof',
];
const SESSION = [
  'subscribe',
  'psubscribe',
  'ssubscribe',
  'unsubscribe',
  'punsubscribe',
  'sunsubscribe',
  'monitor',
  'quit',
  'reset',
  'hello',
  'auth',
  'readonly',
  'readwrite',
  'sync',
  'psync',
  'replconf',
];

/** Effects by lower-case name; `xread`, `xreadgroup` and `client` depend on their arguments. */
const EFFECTS = new Map<string, ConnectionEffect>([
  ...BLOCKING.map((name) => [name, 'blocks'] as const),
  ...SESSION.map((name) => [name, 'session'] as const),
  ['select', 'select'],
  ['watch', 'watch'],
  ['unwatch', 'unwatch'],
  ['multi', 'multi'],
  ['exec', 'exec'],
  ['discard', 'exec'],
]);

/** Names whose effect depends on their arguments. */
const BY_ARGUMENTS = new Set(['xread', 'xreadgroup', 'client']);

/** CLIENT subcommands that only read. */
const CLIENT_READS = new Set(['id', 'info', 'list', 'getname', 'getredir', 'trackinginfo', 'help']);

/** A name or an argument as a lower-case string (ioredis takes both as strings or Buffers). */
function lower(value: unknown): string {
  return (
    typeof value === 'string' ? value : Buffer.isBuffer(value) ? value.toString('latin1') : String(value)
  ).toLowerCase();
}

/** Whether the command named `name` (any case) may leave something on its connection, whatever its arguments. */
export function mayAffect(name: string): boolean {
  const key = lower(name);
  return EFFECTS.has(key) || BY_ARGUMENTS.has(key);
}

/** What the command `name args` leaves on its connection, if anything. */
export function effectOf(name: string, args: readonly unknown[]): ConnectionEffect | undefined {
  const key = lower(name);
  const effect = EFFECTS.get(key);
  if (effect !== undefined || !BY_ARGUMENTS.has(key)) return effect;
  if (key === 'client') return args.length > 0 && CLIENT_READS.has(lower(args[0])) ? undefined : 'session';
  return args.some((a) => lower(a) === 'block') ? 'blocks' : undefined;
}

/** Why a command with `effect` may not run on a connection other callers share. */
export function sharedRefusal(name: string, effect: ConnectionEffect): string {
  const shown = lower(name).toUpperCase();
  switch (effect) {
    case 'blocks':
      return `${shown} blocks its connection until it answers, and every other caller's commands would wait behind it`;
    case 'multi':
    case 'exec':
      return `${shown} outside a pipeline opens or ends a transaction on its connection, and every other caller's commands would fall into it`;
    default:
      return `${shown} changes the state of its connection (its database, a WATCH, a subscription, its client settings), which every caller of the connection would then share`;
  }
}

/**
 * Why the commands of a pipeline may not go out on a shared connection, or undefined: one of them
 * would change or hold it (see {@link effectOf}), or a MULTI in it is not ended by an EXEC or a
 * DISCARD in the same write. `pending` counts the transactions ioredis will end itself (a
 * `multi()` whose EXEC it adds at `exec()`).
 */
export function pipelineRefusal(queue: readonly SentCommand[], pending: number): string | undefined {
  let open = 0;
  for (const command of queue) {
    const effect = effectOf(command.name, command.args);
    if (effect === undefined) continue;
    if (effect === 'multi' && open === 0) open = 1;
    else if (effect === 'exec' && open === 1) open = 0;
    else if (effect === 'multi' || effect === 'exec')
      return `${lower(command.name).toUpperCase()} ${effect === 'multi' ? 'inside a transaction' : 'with no MULTI before it'} in the pipeline`;
    else return sharedRefusal(command.name, effect);
  }
  return open > pending ? 'a MULTI in the pipeline is not ended by an EXEC or a DISCARD in it' : undefined;
}
