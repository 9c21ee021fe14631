// What an AMQP channel carries from one caller to the next, read from the frames amqplib sends and
// receives on it, not from which of its methods were called: a raw `channel.rpc(TxSelect)` is a
// transaction as much as a method would be. On return the channel is cleaned at no round trip
// when nothing was left, or retired when what was left cannot be undone.
import type { Channel } from 'amqplib';

/** AMQP method ids (class << 16 | method), as amqplib's frames carry them in `id`. */
const METHOD = {
  basicQos: (60 << 16) | 10,
  basicConsume: (60 << 16) | 20,
  basicConsumeOk: (60 << 16) | 21,
  basicDeliver: (60 << 16) | 60,
  basicGet: (60 << 16) | 70,
  basicGetOk: (60 << 16) | 71,
  basicGetEmpty: (60 << 16) | 72,
  basicAck: (60 << 16) | 80,
  basicReject: (60 << 16) | 90,
  basicNack: (60 << 16) | 120,
  channelFlow: (20 << 16) | 20,
  txSelect: (90 << 16) | 10,
} as const;

interface Fields {
  deliveryTag?: number;
  multiple?: boolean;
  noAck?: boolean;
  consumerTag?: string;
  prefetchCount?: number;
  prefetchSize?: number;
  global?: boolean;
  active?: boolean;
}

/** What one channel was left with. */
interface ChannelState {
  /** Deliveries taken with acknowledgement owed and not yet acknowledged, by delivery tag. */
  readonly unacked: Set<number>;
  /** Whether each consumer takes its deliveries without acknowledgement, by consumer tag. */
  readonly noAckOf: Map<string, boolean>;
  /** `noAck` of each BasicConsume and BasicGet sent and not yet answered, in order. */
  readonly consuming: boolean[];
  readonly getting: boolean[];
  /** A prefetch other than none, per consumer and per channel. */
  prefetch: boolean;
  globalPrefetch: boolean;
  /** What the channel cannot be cleaned of: a transaction (AMQP has no way out of tx mode), a flow stopped. */
  spoiled: string | undefined;
}

type Frame = { id: number; fields: Fields };
type Send = (method: number, fields: Fields) => unknown;
interface Wire {
  sendImmediately: Send;
  accept(frame: Frame): unknown;
  /** amqplib's reply awaited and RPCs queued behind it. */
  reply: unknown;
  pending: unknown[];
}

const states = new WeakMap<Channel, ChannelState>();

/** Follows what `channel` sends and receives from now on, for {@link resetChannel}. */
export function followChannel(channel: Channel): void {
  const state: ChannelState = {
    unacked: new Set(),
    noAckOf: new Map(),
    consuming: [],
    getting: [],
    prefetch: false,
    globalPrefetch: false,
    spoiled: undefined,
  };
  states.set(channel, state);
  const wire = channel as unknown as Wire;
  const send = wire.sendImmediately.bind(wire);
  wire.sendImmediately = (method, fields) => {
    sent(state, method, fields);
    return send(method, fields);
  };
  const accept = wire.accept.bind(wire);
  wire.accept = (frame) => {
    if (frame !== undefined && frame !== null) received(state, frame);
    return accept(frame);
  };
}

function settle(state: ChannelState, tag: number, multiple: boolean): void {
  if (!multiple) state.unacked.delete(tag);
  else if (tag === 0) state.unacked.clear();
  else for (const t of state.unacked) if (t <= tag) state.unacked.delete(t);
}

function sent(state: ChannelState, method: number, fields: Fields): void {
  switch (method) {
    case METHOD.basicAck:
    case METHOD.basicNack:
      return settle(state, fields.deliveryTag ?? 0, fields.multiple === true);
    case METHOD.basicReject:
      return settle(state, fields.deliveryTag ?? 0, false);
    case METHOD.basicConsume:
      state.consuming.push(fields.noAck === true);
      return;
    case METHOD.basicGet:
      state.getting.push(fields.noAck === true);
      return;
    case METHOD.basicQos: {
      const limited = (fields.prefetchCount ?? 0) !== 0 || (fields.prefetchSize ?? 0) !== 0;
      if (fields.global === true) state.globalPrefetch = limited;
      else state.prefetch = limited;
      return;
    }
    case METHOD.channelFlow:
      if (fields.active === false) state.spoiled ??= 'the channel was left with its flow stopped (channel.flow)';
      return;
    case METHOD.txSelect:
      state.spoiled ??= 'the channel was left in tx mode, which AMQP cannot undo';
  }
}

function received(state: ChannelState, frame: Frame): void {
  switch (frame.id) {
    case METHOD.basicConsumeOk:
      state.noAckOf.set(String(frame.fields.consumerTag), state.consuming.shift() ?? false);
      return;
    case METHOD.basicDeliver:
      if (state.noAckOf.get(String(frame.fields.consumerTag)) !== true) state.unacked.add(frame.fields.deliveryTag!);
      return;
    case METHOD.basicGetOk:
      if (state.getting.shift() !== true) state.unacked.add(frame.fields.deliveryTag!);
      return;
    case METHOD.basicGetEmpty:
      state.getting.shift();
  }
}

/** AMQP channels of a consumer left on them: they would deliver to a caller that has left. */
function consumersOf(channel: Channel): number {
  return (channel as unknown as { consumers?: Map<unknown, unknown> }).consumers?.size ?? 0;
}

/**
 * Cleans a channel given back. Deliveries left unacknowledged go back to their queues (one
 * `basic.nack` with requeue, which the broker does not answer); a prefetch is set back to none
 * (`basic.qos`, a round trip). A channel left with a consumer, in tx mode, with its flow stopped,
 * or with a call still waiting for the broker cannot be made clean: the reset throws why, and the
 * channel is retired. A channel its caller left clean costs nothing.
 */
export function resetChannel(channel: Channel): boolean | Promise<boolean> {
  const state = states.get(channel);
  if (state === undefined) throw new Error('the channel was not made by amqpConnector: its state is unknown');
  const consumers = consumersOf(channel);
  if (consumers > 0)
    throw new Error(
      `the channel was given back with ${consumers} consumer(s) on it, which would deliver to a caller that has left`,
    );
  if (state.spoiled !== undefined) throw new Error(state.spoiled);
  const wire = channel as unknown as Wire;
  if (wire.reply !== null && wire.reply !== undefined)
    throw new Error('the channel was given back with a call on it still waiting for the broker');
  if (state.unacked.size > 0) {
    channel.nackAll(true);
    state.unacked.clear();
  }
  if (!state.prefetch && !state.globalPrefetch) return true;
  return (async () => {
    if (state.prefetch) await channel.prefetch(0, false);
    if (state.globalPrefetch) await channel.prefetch(0, true);
    return !state.prefetch && !state.globalPrefetch && state.unacked.size === 0;
  })();
}
