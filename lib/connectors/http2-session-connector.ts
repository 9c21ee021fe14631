import { once } from 'node:events';
import http2 from 'node:http2';
import type { Duplex } from 'node:stream';
import type { Connector, CreateContext } from '../core/index.js';

/** Options of {@link Http2SessionConnector}. */
export interface Http2SessionConnectorOptions {
  /** `https://host:port` (or `http://` for cleartext HTTP/2). */
  origin: string;
  /** Passed to `http2.connect`: TLS settings (`ca`, `servername`), `settings`, … */
  connectOptions?: http2.ClientSessionOptions | http2.SecureClientSessionOptions;
  /** A validation PING must answer within this. Default 2 000. */
  pingTimeoutMs?: number;
  /** A graceful close may take this long before the session is destroyed. Default 5 000. */
  closeTimeoutMs?: number;
  /**
   * Most callers (streams) per session: the pool's default `clientLimit`. Each session is held
   * to the peer's `maxConcurrentStreams` below it, as the peer's SETTINGS say. Default 100.
   */
  clientLimit?: number;
}

const FATAL_CODES = new Set([
  'ERR_HTTP2_INVALID_SESSION',
  'ERR_HTTP2_GOAWAY_SESSION',
  'ERR_HTTP2_SESSION_ERROR',
  'ECONNRESET',
  'EPIPE',
]);
/** Node's message for a stream the peer closed with REFUSED_STREAM ("Stream closed with error code NGHTTP2_REFUSED_STREAM"). */
const REFUSED = /\bNGHTTP2_REFUSED_STREAM\b/;

/**
 * HTTP/2 sessions, each shared by many callers: one stream each. The session is ready once the
 * peer's SETTINGS arrived, and never carries more callers than the peer's
 * `maxConcurrentStreams` (nor the pool's `clientLimit`), including when the peer changes it.
 * GOAWAY, a socket error or the peer closing the session retire it quietly: callers in flight
 * finish, new ones get another session.
 */
export class Http2SessionConnector implements Connector<http2.ClientHttp2Session> {
  /** HTTP/2 multiplexes streams: a session may be shared, up to this many callers (the pool's default `clientLimit`). */
  readonly clientLimit: number;
  /** Each lease's session is a handle of its own, which refuses work once the lease ends. */
  readonly lendsHandles = true;
  readonly #options: Required<Omit<Http2SessionConnectorOptions, 'connectOptions' | 'clientLimit'>> &
    Pick<Http2SessionConnectorOptions, 'connectOptions'>;
  /** The first SETTINGS frame of each session, awaited by `ready()`. */
  readonly #settings = new WeakMap<http2.ClientHttp2Session, Promise<unknown>>();
  /**
   * Each session's socket, as its `connect` event hands it over. Once a session has closed, Node
   * unbinds it (`session.socket` throws) yet may wait on it forever: after a peer's GOAWAY, a
   * closed session half-closes its socket and waits for the peer's end, which a peer keeping the
   * connection open never sends. Only destroying the socket itself ends that.
   */
  readonly #sockets = new WeakMap<http2.ClientHttp2Session, Duplex>();

  constructor(options: Http2SessionConnectorOptions | string) {
    const o = typeof options === 'string' ? { origin: options } : options;
    let protocol = '';
    try {
      protocol = new URL(o.origin).protocol;
    } catch {
      // reported below
    }
    if (protocol !== 'https:' && protocol !== 'http:') {
      throw new TypeError(
        `Http2SessionConnector: origin must be an https:// or http:// URL, got ${JSON.stringify(o.origin)}`,
      );
    }
    // The pool checks a declared clientLimit, as any connector's (option "connector.clientLimit").
    const { clientLimit = 100, ...rest } = o;
    this.clientLimit = clientLimit;
    this.#options = { pingTimeoutMs: 2_000, closeTimeoutMs: 5_000, ...rest };
  }

  async create(ctx: CreateContext): Promise<http2.ClientHttp2Session> {
    const session = http2.connect(this.#options.origin, this.#options.connectOptions);
    session.on('error', (err: Error) => ctx.retire(`session error: ${err.message}`)); // never an unhandled 'error'
    // NO_ERROR (0) is a graceful GOAWAY (a server restarting, or closing an idle session): no error.
    session.on('goaway', (code: number) =>
      code === http2.constants.NGHTTP2_NO_ERROR
        ? ctx.retire('GOAWAY from the peer (code 0, NO_ERROR: a graceful close)', { graceful: true })
        : ctx.retire(`GOAWAY from the peer (code ${code})`),
    );
    session.on('close', () => ctx.retire('the session closed'));
    session.on('remoteSettings', (settings: http2.Settings) => {
      if (settings.maxConcurrentStreams !== undefined) ctx.setClientLimit(settings.maxConcurrentStreams);
    });
    const settings = once(session, 'remoteSettings', { signal: ctx.signal });
    settings.catch(() => {}); // awaited by ready(); a failed connect is reported below
    this.#settings.set(session, settings);
    try {
      const [, socket] = (await once(session, 'connect', { signal: ctx.signal })) as [unknown, Duplex];
      this.#sockets.set(session, socket);
    } catch (err) {
      session.destroy();
      throw err;
    }
    return session;
  }

  /** Ready once the peer's SETTINGS arrived: its stream limit is then known. */
  async ready(session: http2.ClientHttp2Session): Promise<void> {
    await this.#settings.get(session);
  }

  /** A PING round trip, for sessions idle a while (a NAT or the peer may have dropped them). */
  validate(session: http2.ClientHttp2Session): Promise<boolean> {
    if (session.closed || session.destroyed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), this.#options.pingTimeoutMs);
      timer.unref();
      const sent = session.ping((err) => {
        clearTimeout(timer);
        resolve(err === null);
      });
      if (!sent) {
        clearTimeout(timer);
        resolve(false);
      }
    });
  }

  /**
   * Closes gracefully (streams in flight finish), then destroys the session and its socket after
   * `closeTimeoutMs` (a peer that sent GOAWAY may never end the connection: see #sockets).
   */
  async close(session: http2.ClientHttp2Session): Promise<void> {
    const socket = this.#sockets.get(session);
    if (session.destroyed && (socket === undefined || socket.destroyed)) return;
    const closed = once(session, 'close').then(() => undefined);
    session.close();
    const timer = setTimeout(() => {
      session.destroy();
      socket?.destroy();
    }, this.#options.closeTimeoutMs);
    timer.unref();
    await closed;
    clearTimeout(timer);
  }

  /**
   * Errors that mean the session is unusable: `use()` retires it (and retries, if asked). A
   * stream the peer refused (REFUSED_STREAM) counts: the peer did not process it, so another
   * session may safely take it again (RFC 9113, 8.7), and this one never carries more streams
   * than the peer allows, so a refusal means the peer is going away (a GOAWAY that crossed the
   * request on the wire) or misbehaving.
   */
  isFatal(err: unknown): boolean {
    const code = (err as NodeJS.ErrnoException | undefined)?.code ?? '';
    return FATAL_CODES.has(code) || (code === 'ERR_HTTP2_STREAM_ERROR' && REFUSED.test((err as Error).message));
  }
}

/** The answer of {@link http2Request}. */
export interface Http2Response {
  status: number;
  headers: http2.IncomingHttpHeaders;
  body: Buffer;
}

/** One request on a session: sends `body` (if any), collects the whole answer. */
export function http2Request(
  session: http2.ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders,
  body?: string | Buffer,
  signal?: AbortSignal,
): Promise<Http2Response> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers, { signal, endStream: body === undefined });
    const chunks: Buffer[] = [];
    let responseHeaders: http2.IncomingHttpHeaders = {};
    stream.on('response', (h) => (responseHeaders = h));
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () =>
      resolve({ status: Number(responseHeaders[':status']), headers: responseHeaders, body: Buffer.concat(chunks) }),
    );
    stream.on('error', reject);
    if (body !== undefined) stream.end(body);
  });
}
