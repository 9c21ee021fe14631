import amqp, { type Channel, type ChannelModel, type ConfirmChannel, type Options } from 'amqplib';
import { type Connector, type CreateContext, type HandleLending, is, keysOf, OptionReader } from '../../core/index.js';
import { checkTarget, ofDriver, type TargetSpec } from '../index.js';
import { followChannel, resetChannel } from './amqp-channel-state.js';

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
  /** Connected: its channel_max is known. */
  open: boolean;
  /** Most channels it may carry: one while it opens (the broker's channel_max is not known yet), then the agreed. */
  limit: number;
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
/** The channel's methods that answer at once (the rest make a round trip and answer with a promise). */
const AMQP_SYNC = new Set(['publish', 'sendToQueue', 'ack', 'ackAll', 'nack', 'nackAll', 'reject', 'emit']);

/** A handle per lease: a publish or a call its holder makes after the lease ended fails, and sends nothing. */
const AMQP_LENDING: HandleLending = { returnsPromise: (name) => !AMQP_SYNC.has(name) };

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
 * those are full (one opening carries a single channel until its channel_max is known). A
 * channel the broker closes (a channel error) is retired alone; a broken connection retires every
 * channel on it. A channel comes back clean, by what went over its wire: unacknowledged
 * deliveries are requeued, a prefetch set back; one left with a consumer, in tx mode, with its
 * flow stopped or a call waiting is retired. A connection closes with its last channel.
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

  /**
   * A connection with room for one more channel (counted before any await). While one opens it
   * carries a single channel, the others waiting for it: the channel_max it will agree on is not
   * known until then, and a channel past it fails.
   */
  const carrier = async (): Promise<Carrier> => {
    for (;;) {
      let opening: Carrier | undefined;
      for (const c of carriers) {
        if (c.done) continue;
        if (c.channels < c.limit) {
          c.channels++;
          return c;
        }
        if (!c.open) opening ??= c;
      }
      if (opening === undefined) return connectCarrier();
      await opening.model.catch(() => {});
    }
  };

  const connectCarrier = (): Carrier => {
    const c: Carrier = { model: amqp.connect(url, socketOptions), channels: 1, done: false, open: false, limit: 1 };
    carriers.add(c);
    c.model.then(
      (model) => {
        const agreed = (model.connection as unknown as { channelMax?: number }).channelMax || 0xffff;
        c.limit = Math.min(perConnection, agreed);
        c.open = true;
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
    const c = await carrier();
    let channel: Channel;
    try {
      const model = await c.model;
      channel = confirm ? await model.createConfirmChannel() : await model.createChannel();
    } catch (err) {
      released(c);
      throw err;
    }
    followChannel(channel);
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
      lendsHandles: AMQP_LENDING,
      create: open,
      ready: async (channel) => {
        // A round trip on the channel: the broker answers only on an open one.
        await channel.checkExchange('amq.direct');
      },
      reset: resetChannel,
      close: async (channel) => {
        await channel.close().catch(() => {});
      },
      isFatal: isAmqpChannelError,
    },
    'amqp',
  );
}
