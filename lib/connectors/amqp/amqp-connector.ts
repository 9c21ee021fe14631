import amqp, { type Channel, type ChannelModel, type ConfirmChannel, type Options } from 'amqplib';
import { type Connector, type CreateContext, is, keysOf, OptionReader } from '../../core/index.js';
import { checkTarget, ofDriver, type TargetSpec } from '../index.js';

/** Options of {@link amqpConnector}. */
export interface AmqpConnectorOptions {
  /** Confirm channels (`createConfirmChannel()`): publishes are acknowledged by the broker. Default `false`. */
  confirm?: boolean;
  /**
   * Most channels one connection carries, below the `channel_max` the broker and client agreed
   * on (which always bounds it). More channels open another connection. Default: that `channel_max`.
   */
  channelsPerConnection?: number;
  /** Passed to `amqplib.connect()` as its socket options (TLS settings, `clientProperties`). */
  socketOptions?: Record<string, unknown>;
}

/** One AMQP connection and the channels the pool holds on it. */
interface Carrier {
  readonly model: Promise<ChannelModel>;
  /** Channels open or opening on it. */
  channels: number;
  /** Closed or broken: it takes no new channel. */
  done: boolean;
  /** Most channels it may carry, once connected. */
  limit: number;
}

/** AMQP channels of a consumer left on them: they would deliver to a caller that has left. */
function consumersOf(channel: Channel): number {
  return (channel as unknown as { consumers?: Map<unknown, unknown> }).consumers?.size ?? 0;
}

/**
 * Whether an amqplib error means its channel or connection is gone: the broker closed it (a
 * channel error such as 404 NOT_FOUND or 406 PRECONDITION_FAILED closes the channel), or the socket broke.
 */
export function isAmqpChannelError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && ['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNREFUSED'].includes(code)) return true;
  return (
    /Channel closed|Channel ended|Connection closed|IllegalOperationError|Socket closed/i.test(err.message) ||
    err.name === 'IllegalOperationError'
  );
}

/** What amqpConnector() connects with: a URL or amqplib's connect options, never a live connection. */
const AMQP_TARGET: TargetSpec = {
  what: 'an amqp:// URL (amqps:// for TLS) or amqplib connect options',
  schemes: ['amqp:', 'amqps:'],
  ports: ['port'],
  durations: ['heartbeat', 'frameMax', 'channelMax'],
  live: (value) =>
    typeof (value as { createChannel?: unknown }).createChannel === 'function'
      ? 'is a live amqplib connection, where its settings belong: the connector makes its own connections; give it a URL or connect options'
      : undefined,
};

/**
 * AMQP (RabbitMQ) through `amqplib`: the pool's connections are **channels**, one caller at a
 * time each (a channel is the unit of work in AMQP, and its state: consumers, prefetch,
 * transactions, is per channel), while the channels share few TCP connections: up to the
 * negotiated `channel_max` (or `channelsPerConnection`) each, another connection opening only when
 * those are full. A channel the broker closes (a channel error) is retired alone; a broken
 * connection retires every channel on it. A channel comes back clean: one left with a consumer is
 * retired (its messages would go to a caller that has left). A connection closes with its last channel.
 *
 * @param url an `amqp://` URL or amqplib's connect options.
 */
export function amqpConnector(
  url: string | Options.Connect,
  options: AmqpConnectorOptions & { confirm: true },
): Connector<ConfirmChannel>;
export function amqpConnector(url: string | Options.Connect, options?: AmqpConnectorOptions): Connector<Channel>;
export function amqpConnector(url: string | Options.Connect, options: AmqpConnectorOptions = {}): Connector<Channel> {
  const read = new OptionReader({ subject: 'module', name: 'amqpConnector()' }, options).only(
    keysOf<AmqpConnectorOptions>({ confirm: true, channelsPerConnection: true, socketOptions: true }),
    "amqpConnector()'s options",
  );
  checkTarget('amqpConnector()', 'url', url, AMQP_TARGET);
  const confirm = read.get('confirm', is.boolean, false);
  const perConnection = read.get('channelsPerConnection', is.whole(1), Infinity);
  const socketOptions = read.get('socketOptions', is.object, {});
  const carriers = new Set<Carrier>();
  const carrierOf = new WeakMap<Channel, Carrier>();

  /** A connection with room for one more channel (counted now, before any await), opening one if none has. */
  const carrier = (): Carrier => {
    for (const c of carriers) {
      if (!c.done && c.channels < c.limit) {
        c.channels++;
        return c;
      }
    }
    const c: Carrier = { model: amqp.connect(url, socketOptions), channels: 1, done: false, limit: perConnection };
    carriers.add(c);
    c.model.then(
      (model) => {
        const agreed = (model.connection as unknown as { channelMax?: number }).channelMax || 0xffff;
        c.limit = Math.min(perConnection, agreed);
        const gone = () => {
          c.done = true;
          carriers.delete(c);
        };
        model.on('error', gone);
        model.on('close', gone);
      },
      () => {
        c.done = true;
        carriers.delete(c);
      },
    );
    return c;
  };

  /** One channel fewer on `c`: a connection left with none closes. */
  const released = (c: Carrier): void => {
    c.channels--;
    if (c.channels > 0 || c.done) return;
    c.done = true;
    carriers.delete(c);
    void c.model.then((model) => model.close()).catch(() => {});
  };

  const open = async (ctx: CreateContext): Promise<Channel> => {
    const c = carrier();
    let channel: Channel;
    try {
      const model = await c.model;
      channel = confirm ? await model.createConfirmChannel() : await model.createChannel();
    } catch (err) {
      released(c);
      throw err;
    }
    carrierOf.set(channel, c);
    // A channel error closes the channel ('error' then 'close'); a connection's end closes them all.
    channel.on('error', (err: Error) => ctx.retire(err));
    channel.once('close', () => {
      ctx.retire(new Error('the channel closed'));
      released(c);
    });
    return channel;
  };

  return ofDriver(
    {
      clientLimit: 1,
      create: open,
      ready: async (channel) => {
        // A round trip on the channel: the broker answers only on an open one.
        await channel.checkExchange('amq.direct');
      },
      reset: (channel) => {
        const consumers = consumersOf(channel);
        if (consumers > 0)
          throw new Error(
            `the channel was given back with ${consumers} consumer(s) on it, which would deliver to a caller that has left`,
          );
        return true;
      },
      close: async (channel) => {
        await channel.close().catch(() => {});
      },
      isFatal: isAmqpChannelError,
    },
    'amqp',
  );
}
