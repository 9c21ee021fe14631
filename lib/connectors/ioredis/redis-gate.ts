// The shared client's gate: every way a command leaves ioredis (a method, `call`, `send_command`,
// `callBuffer`, `sendCommand`, a pipeline, `multi()`, the auto-pipeline) meets one check before any
// byte of it is written, so that nothing one caller sends can change or hold the connection the
// others share.
import { Command, type Redis } from 'ioredis';
// ioredis marks the pipelines its auto-pipeline builds with this symbol.
import { kExec } from 'ioredis/built/autoPipelining.js';
import { effectOf, mayAffect, pipelineRefusal, type SentCommand, sharedRefusal } from './redis-commands.js';

type SendCommand = (command: SentCommand, stream?: { isPipeline?: boolean }, ...rest: unknown[]) => unknown;

/** A pipeline as ioredis builds it, as far as the gate reads it. */
interface GatedPipeline {
  _queue: SentCommand[];
  _transactions: number;
  exec(callback?: (err: Error | null, result?: unknown) => void): Promise<unknown>;
}

const SHARED = 'not on a shared connection (sharedRedisConnector); run it on an exclusive one (redisConnector)';

/** The error a refused command or pipeline fails with. */
function refused(why: string): Error {
  return new Error(`${why}: ${SHARED}`);
}

/** Clients gated, and whether the pool is closing them (their QUIT then goes through). */
const closing = new WeakMap<Redis, { closing: boolean }>();

/** Lets the pool's own QUIT through the gate of `client`; false if the client has none. */
export function openGateToClose(client: Redis): boolean {
  const gate = closing.get(client);
  if (gate !== undefined) gate.closing = true;
  return gate !== undefined;
}

/**
 * Refuses, on `client`, whatever would change or hold the connection for the callers sharing it
 * (see redis-commands.ts), compared case-insensitively however it is sent: a command alone fails
 * with an error that says to use redisConnector, a pipeline or `multi()` holding one fails whole
 * with nothing of it written, as does a pipeline whose MULTI it does not end itself.
 */
export function gateShared(client: Redis): Redis {
  const gate = { closing: false };
  closing.set(client, gate);
  const options = client.options as { autoPipeliningIgnoredCommands?: string[] };
  // The auto-pipeline queues a command with the callers' others before the gate could see it:
  // whatever may change the connection goes around it, to sendCommand, alone.
  const ignored = [...(options.autoPipeliningIgnoredCommands ?? [])];
  options.autoPipeliningIgnoredCommands = Object.assign([...ignored], {
    includes: (name: string) => mayAffect(name) || ignored.includes(name),
  });

  const send = client.sendCommand.bind(client) as unknown as SendCommand;
  (client as unknown as { sendCommand: SendCommand }).sendCommand = (command, stream, ...rest) => {
    // A pipeline's commands were checked together at its exec(), before this write.
    if (stream?.isPipeline !== true) {
      const effect = effectOf(command.name, command.args);
      if (effect !== undefined && !(gate.closing && command.name.toLowerCase() === 'quit')) {
        command.reject(refused(sharedRefusal(command.name, effect)));
        return command.promise;
      }
    }
    return send(command, stream, ...rest);
  };

  // ioredis's auto-pipeline drops callBuffer's command name (it sends `GET key` as `key`): a
  // callBuffer goes around it, as a command of its own.
  (client as unknown as { callBuffer: (...args: unknown[]) => unknown }).callBuffer = (name, ...args) => {
    const callback = typeof args.at(-1) === 'function' ? (args.pop() as (e: unknown, v?: unknown) => void) : undefined;
    const command = new Command(String(name), args as string[], {
      keyPrefix: client.options.keyPrefix,
      replyEncoding: null,
    });
    const reply = client.sendCommand(command) as Promise<unknown>;
    if (callback !== undefined) reply.then((value) => callback(null, value), callback);
    return reply;
  };

  const pipeline = client.pipeline.bind(client) as unknown as (...args: unknown[]) => GatedPipeline;
  (client as unknown as { pipeline: typeof pipeline }).pipeline = (...args) => gatePipeline(pipeline(...args));
  const multi = client.multi.bind(client) as unknown as (...args: unknown[]) => GatedPipeline;
  (client as unknown as { multi: typeof multi }).multi = (...args) => {
    const settings = args.find((a) => typeof a === 'object' && a !== null && !Array.isArray(a)) as
      { pipeline?: boolean } | undefined;
    if (settings?.pipeline === false)
      throw new Error(
        'multi({ pipeline: false }) leaves MULTI open on its connection between calls: not on a shared connection (sharedRedisConnector); use multi() (a pipeline) or an exclusive connection (redisConnector)',
      );
    return gatePipeline(multi(...args));
  };
  return client;
}

/** `pipeline`, its exec() refused whole when a command in it may not go out on a shared connection. */
function gatePipeline(pipeline: GatedPipeline): GatedPipeline {
  const exec = pipeline.exec;
  pipeline.exec = function (this: GatedPipeline, callback) {
    // The auto-pipeline's commands each passed the gate's name check before they were queued.
    if ((this as unknown as Record<symbol, unknown>)[kExec] !== undefined) return exec.call(this, callback);
    const why = pipelineRefusal(this._queue, this._transactions);
    if (why === undefined) return exec.call(this, callback);
    const failed = Promise.reject(refused(`the pipeline was not sent: ${why}`));
    if (typeof callback === 'function') failed.catch((err: Error) => callback(err));
    return failed;
  };
  return pipeline;
}
