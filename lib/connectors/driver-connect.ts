// What the driver connectors share: their first argument checked, and a connect the pool can abort.
import { optionError, shown } from '../core/index.js';

/** What a driver connector takes as its first argument, checked when the connector is made. */
export interface TargetSpec {
  /** What it takes, as errors say it: "a connection string or a pg.ClientConfig". */
  readonly what: string;
  /** URL schemes it connects to ("postgres:"); a string with another scheme is refused. */
  readonly schemes: readonly string[];
  /** Strings it takes that are not URLs: libpq's `key=value` pairs, a socket path. */
  readonly plain?: (text: string) => boolean;
  /** Option fields that are a port, or a duration in ms or s (finite, not negative, if given). */
  readonly ports?: readonly string[];
  readonly durations?: readonly string[];
  /** Option fields that are a whole number, each with its least value (a database index, a cache size). */
  readonly wholes?: Readonly<Record<string, number>>;
  /** The options field that holds a URL (pg's `connectionString`, mysql2's `uri`): checked as the URL itself. */
  readonly urlField?: string;
  /** Why a URL's path cannot be used (Redis takes a database index there), or undefined. */
  readonly urlPath?: (pathname: string) => string | undefined;
  /** The driver's live object (a client, a pool) given where its settings belong: what to give instead. */
  readonly live?: (value: object) => string | undefined;
}

/**
 * Refuses, with what to change, a first argument `field` that the connector could not connect
 * with: neither a string nor an object, an empty or unusable string, a URL of another scheme, a
 * live client or pool where settings belong, a port or a duration that is not a finite number
 * at least 0. Each of these would otherwise fail at the first create, or crash the process there.
 */
export function checkTarget(connector: string, field: string, value: unknown, spec: TargetSpec): void {
  const where = { subject: 'module' as const, name: connector };
  const fail = (why: string) => optionError(where, field, field.includes('.') ? why : `(the first argument) ${why}`);
  if (typeof value === 'string') {
    const text = value.trim();
    if (text === '') throw fail(`is empty: give ${spec.what}`);
    if (spec.plain?.(text) === true) return;
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw fail(`must be ${spec.what}, got ${shown(value)}, which is not a URL`);
    }
    if (!spec.schemes.includes(url.protocol))
      throw fail(`must be ${spec.what}: a URL of ${spec.schemes.join(' or ')}, got one of ${url.protocol}`);
    if (url.port !== '' && Number(url.port) === 0) throw fail(`names port 0: give the server's port`);
    const path = spec.urlPath?.(decodeURIComponent(url.pathname));
    if (path !== undefined) throw fail(path);
    // The driver reads its settings from the query too: the same checks as in an object.
    const query: Record<string, unknown> = {};
    for (const [key, text] of url.searchParams)
      query[key] = Number.isNaN(Number(text)) || text.trim() === '' ? text : Number(text);
    checkFields(where, `${field} (its query)`, query, { ...spec, ports: [] });
    return;
  }
  if (typeof value !== 'object' || value === null) throw fail(`must be ${spec.what}, got ${shown(value)}`);
  const instead = spec.live?.(value);
  if (instead !== undefined) throw fail(instead);
  checkFields(where, field, value as Record<string, unknown>, spec);
  const url = spec.urlField === undefined ? undefined : (value as Record<string, unknown>)[spec.urlField];
  if (url !== undefined) checkTarget(connector, `${field}.${spec.urlField}`, url, { ...spec, urlField: undefined });
}

/** The ports, durations and whole numbers of `fields` (an options object, or a URL's query). */
function checkFields(
  where: { subject: 'module'; name: string },
  field: string,
  fields: Record<string, unknown>,
  spec: TargetSpec,
): void {
  for (const key of spec.ports ?? []) {
    const port = fields[key];
    if (port === undefined) continue;
    const n = typeof port === 'string' && port.trim() !== '' ? Number(port) : port;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 65_535)
      throw optionError(
        where,
        `${field}.${key}`,
        `must be a port (a whole number from 1 to 65535), got ${shown(port)}`,
      );
  }
  for (const key of spec.durations ?? []) {
    const ms = fields[key];
    if (ms === undefined || ms === false) continue; // false: off, where the driver takes it
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0)
      throw optionError(where, `${field}.${key}`, `must be a finite number at least 0, got ${shown(ms)}`);
  }
  for (const [key, least] of Object.entries(spec.wholes ?? {})) {
    const n = fields[key];
    if (n === undefined) continue;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < least)
      throw optionError(where, `${field}.${key}`, `must be a whole number at least ${least}, got ${shown(n)}`);
  }
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

/** The driver of each ready-made connector: a face over one (asPgPool) refuses a pool of another. */
const drivers = new WeakMap<object, string>();

/** Marks `connector` as one of `driver`'s ("pg", "mysql2", "ioredis", "amqp"); returns it. */
export function ofDriver<C extends object>(connector: C, driver: string): C {
  drivers.set(connector, driver);
  return connector;
}

/** The driver of a ready-made connector; undefined for one of the application's own. */
export function driverOf(connector: object): string | undefined {
  return drivers.get(connector);
}
