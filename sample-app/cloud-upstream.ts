// An in-process HTTP/2 server that behaves like a cloud API: a slow connect (as a TLS handshake
// would be), a limit on concurrent streams per session, and an idle timeout after which it sends
// GOAWAY and closes the session. The sample app proxies to it when UPSTREAM_URL is not set.
import { once } from 'node:events';
import http2 from 'node:http2';
import net from 'node:net';

export interface CloudUpstreamOptions {
  /** Delay before the server speaks on a new connection. Default 150. */
  handshakeDelayMs?: number;
  /** Streams one session may carry at once (SETTINGS_MAX_CONCURRENT_STREAMS). Default 50. */
  maxConcurrentStreams?: number;
  /** A session without streams for this long gets GOAWAY and is closed. Default 30 000. */
  idleTimeoutMs?: number;
  /** Time to answer one request. Default 5. */
  responseDelayMs?: number;
  /**
   * Requests it serves at full speed at once; past it each answer slows in proportion (as a
   * backend sharing its workers does), and past four times it answers 503. Default: no limit.
   */
  capacity?: number;
}

export interface CloudUpstream {
  readonly url: string;
  /** Sessions the server accepted so far. */
  readonly sessionsOpened: number;
  /** Sessions open now. */
  readonly sessionsOpen: number;
  /** Requests the server is working on now. */
  readonly inflight: number;
  /** Sends GOAWAY on every open session (as a rolling deploy of the API would). */
  goawayAll(): void;
  close(): Promise<void>;
}

export async function startCloudUpstream(options: CloudUpstreamOptions = {}): Promise<CloudUpstream> {
  const {
    handshakeDelayMs = 150,
    maxConcurrentStreams = 50,
    idleTimeoutMs = 30_000,
    responseDelayMs = 5,
    capacity = Infinity,
  } = options;
  let inflight = 0;
  const server = http2.createServer({ settings: { maxConcurrentStreams } });
  const sessions = new Set<http2.ServerHttp2Session>();
  let opened = 0;

  server.on('session', (session) => {
    opened++;
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    session.on('error', () => {});
    session.setTimeout(idleTimeoutMs, () => {
      session.goaway();
      session.close();
    });
  });
  server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    const path = String(headers[':path']);
    if (inflight >= capacity * 4) {
      stream.respond({ ':status': 503, 'content-type': 'application/json' });
      stream.end(JSON.stringify({ path, error: 'overloaded' }));
      return;
    }
    inflight++;
    setTimeout(
      () => {
        inflight--;
        if (stream.destroyed) return;
        stream.respond({ ':status': 200, 'content-type': 'application/json' });
        stream.end(JSON.stringify({ path, at: Date.now() }));
      },
      responseDelayMs * Math.max(1, inflight / capacity),
    );
  });

  // The front socket waits before handing the connection to HTTP/2: the "handshake".
  const front = net.createServer((socket) => {
    socket.on('error', () => {});
    setTimeout(() => {
      if (!socket.destroyed) server.emit('connection', socket);
    }, handshakeDelayMs);
  });
  front.listen(0, '127.0.0.1');
  await once(front, 'listening');
  const { port } = front.address() as net.AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    get sessionsOpened() {
      return opened;
    },
    get sessionsOpen() {
      return sessions.size;
    },
    get inflight() {
      return inflight;
    },
    goawayAll() {
      for (const session of sessions) {
        session.goaway();
        session.close();
      }
    },
    async close() {
      for (const session of sessions) session.destroy();
      await new Promise<void>((resolve) => front.close(() => resolve()));
      server.close();
    },
  };
}
