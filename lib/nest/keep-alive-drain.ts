import { Injectable, type BeforeApplicationShutdown } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';

/** What the drain needs of Node's HTTP server (Express and Fastify both run on one). */
interface ClosingServer {
  closeIdleConnections?(): void;
  once(event: 'close', listener: () => void): unknown;
  on(
    event: 'request',
    listener: (req: unknown, res: { setHeader(name: string, value: string): unknown; headersSent: boolean }) => void,
  ): unknown;
  listening?: boolean;
}

/** How often idle keep-alive connections are closed while the server shuts down. */
const DRAIN_EVERY_MS = 25;

/**
 * Lets the HTTP server close as soon as its requests in flight are answered, so the pools close
 * right after (they close once the server has). Node's `server.close()` closes the connections
 * idle at that moment only: a keep-alive connection whose request was in flight stays open after
 * its answer until the client's next request or the server's keep-alive timeout (5 s on Express,
 * 72 s on Fastify), and the pools wait for it. From `beforeApplicationShutdown` until the server
 * has closed, this closes idle connections every 25 ms and asks requests that arrive meanwhile
 * to close their connection. Unlike Nest's `forceCloseConnections`, it never cuts a request in
 * flight. An application without an HTTP server is left alone.
 */
@Injectable()
export class KeepAliveDrain implements BeforeApplicationShutdown {
  constructor(private readonly host: HttpAdapterHost) {}

  beforeApplicationShutdown(): void {
    const server = this.#server();
    if (server?.closeIdleConnections === undefined || server.listening === false) return;
    server.on('request', (_req, res) => {
      if (!res.headersSent) res.setHeader('connection', 'close');
    });
    const timer = setInterval(() => server.closeIdleConnections!(), DRAIN_EVERY_MS);
    timer.unref();
    server.once('close', () => clearInterval(timer));
  }

  #server(): ClosingServer | undefined {
    try {
      return this.host.httpAdapter?.getHttpServer() as ClosingServer | undefined;
    } catch {
      return undefined; // an application context, or an adapter that has no server yet
    }
  }
}
