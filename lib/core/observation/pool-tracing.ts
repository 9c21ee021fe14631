// Traces through `@opentelemetry/api` (an optional peer): a span for each checkout that waited, in
// the caller's trace; the pool's own work with its connections (creates, readiness, validations,
// resets, closes) in no caller's trace. Typed by the fields used, so the package's types need no
// OpenTelemetry package installed.
import { createRequire } from 'node:module';
import type { Connector } from '../contracts/index.js';
import { messageOf } from '../common/index.js';

/** The part of an OpenTelemetry `Span` the pool uses. */
interface TraceSpan {
  setAttribute(key: string, value: string | number | boolean): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: unknown): unknown;
  end(): void;
}

/** The part of `@opentelemetry/api` the pool uses. */
interface TraceApi {
  trace: {
    getTracerProvider(): { getDelegate?(): { constructor: { name: string } } };
    getTracer(
      name: string,
      version?: string,
    ): {
      startSpan(name: string, options?: { kind?: number; attributes?: Record<string, string | number> }): TraceSpan;
    };
  };
  context: { with<R>(context: unknown, fn: () => R): R };
  ROOT_CONTEXT: unknown;
  SpanStatusCode: { ERROR: number };
  SpanKind: { INTERNAL: number };
}

/** What a traced wait was for: a connection (the pool's queue), admission (its limiter), or the scope's turn. */
export type WaitFor = 'connection' | 'admission' | 'turn';

/** A pool's tracing, when the application registered a TracerProvider. */
export interface PoolTracing {
  /**
   * A span in the caller's trace for `wait`, a wait that has just begun (a caller's checkout that
   * could not be served at once): it ends when the wait settles, with its error if it failed.
   */
  waited<R>(pool: string, waitFor: WaitFor, timeoutMs: number, wait: Promise<R>): Promise<R>;
  /** Runs `fn` in no trace (OpenTelemetry's root context): the pool's own work, not a caller's. */
  detached<R>(fn: () => R): R;
}

const POOL = 'db.client.connection.pool.name';
const WAIT_SPAN = 'nestjs-shared-pool.wait';

let appTracing: PoolTracing | null | undefined;

/**
 * The tracing of the application's global TracerProvider, or null when `@opentelemetry/api` is
 * not installed or no provider is registered: then no span is made and nothing is paid. Looked up
 * when a pool with `tracing: true` is made, until a provider is found (so a pool made before the
 * SDK starts is untraced, and one made after is traced).
 */
export function globalTracing(): PoolTracing | null {
  if (appTracing !== undefined && appTracing !== null) return appTracing;
  let api: TraceApi;
  try {
    api = createRequire(import.meta.url)('@opentelemetry/api') as TraceApi;
  } catch {
    return (appTracing = null);
  }
  const delegate = api.trace.getTracerProvider().getDelegate?.();
  if (delegate === undefined || delegate.constructor.name === 'NoopTracerProvider') return (appTracing = null);
  return (appTracing = tracingOf(api));
}

function tracingOf(api: TraceApi): PoolTracing {
  const tracer = api.trace.getTracer('nestjs-shared-pool');
  const { ROOT_CONTEXT, context, SpanStatusCode, SpanKind } = api;
  return {
    waited(pool, waitFor, timeoutMs, wait) {
      const attributes: Record<string, string | number> = { [POOL]: pool, 'nestjs_shared_pool.wait.for': waitFor };
      if (Number.isFinite(timeoutMs)) attributes['nestjs_shared_pool.wait.timeout_ms'] = timeoutMs;
      const span = tracer.startSpan(WAIT_SPAN, { kind: SpanKind.INTERNAL, attributes });
      wait.then(
        () => span.end(),
        (error: unknown) => {
          span.setAttribute('error.type', errorType(error));
          span.setStatus({ code: SpanStatusCode.ERROR, message: messageOf(error) });
          span.end();
        },
      );
      return wait;
    },
    detached: (fn) => context.with(ROOT_CONTEXT, fn),
  };
}

/** OpenTelemetry's `error.type`: the error's code (`ACQUIRE_TIMEOUT`), else its class. */
function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code !== '') return code;
  const name = (error as { constructor?: { name?: unknown } } | null)?.constructor?.name;
  return typeof name === 'string' && name !== '' && name !== 'Object' ? name : '_OTHER';
}

/** The connector methods the pool calls for its own work. */
const OWN_WORK = ['create', 'ready', 'validate', 'reset', 'close'] as const;

/**
 * The connector as the pool calls it when traced: its create, ready, validate, reset and close run
 * in no caller's trace (a driver's instrumentation would file them under whichever request
 * happened to start them). Everything else is the connector's own, through its prototype.
 */
export function detachedConnector<T>(connector: Connector<T>, tracing: PoolTracing): Connector<T> {
  const detached = Object.create(connector) as Record<string, unknown>;
  for (const name of OWN_WORK) {
    const method = (connector as unknown as Record<string, unknown>)[name];
    if (typeof method !== 'function') continue;
    detached[name] = (...args: unknown[]) => tracing.detached(() => method.apply(connector, args));
  }
  return detached as unknown as Connector<T>;
}
