import { afterEach, describe, expect, it } from '@jest/globals';
import { once } from 'node:events';
import http2, { type ClientHttp2Session } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { ConnectionPool, Http2SessionConnector, http2Request, POOL_CHANNELS } from '../../lib/index.js';
import { startCloudUpstream, type CloudUpstream } from '../../sample-app/cloud-upstream.js';
import { RecordingLogger } from '../support/harness.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const open: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const thing of open.splice(0).reverse()) await thing.close();
});

async function setup(upstreamOptions: Parameters<typeof startCloudUpstream>[0], poolOptions = {}) {
  const upstream: CloudUpstream = await startCloudUpstream({ handshakeDelayMs: 20, ...upstreamOptions });
  open.push(upstream);
  const pool = new ConnectionPool(new Http2SessionConnector(upstream.url), {
    name: 'upstream',
    maxSize: 10,
    clientLimit: 100,
    ...poolOptions,
  });
  open.push({ close: () => pool.close({ graceMs: 1_000 }) });
  const get = (path: string) =>
    pool.use(async (session: ClientHttp2Session) => {
      const res = await http2Request(session, { ':path': path });
      return JSON.parse(res.body.toString()) as { path: string };
    });
  return { upstream, pool, get };
}

describe('Http2SessionConnector', () => {
  it('never lets more callers share a session than the peer allows streams', async () => {
    const { pool, get, upstream } = await setup({ maxConcurrentStreams: 5, responseDelayMs: 30 });
    const bodies = await Promise.all(Array.from({ length: 15 }, (_, i) => get(`/r/${i}`)));
    expect(bodies.map((b) => b.path)).toEqual(Array.from({ length: 15 }, (_, i) => `/r/${i}`));
    const stats = pool.stats();
    expect(stats.connections.every((c) => c.clientLimit === 5)).toBe(true);
    expect(stats.counters.opened).toBeGreaterThanOrEqual(3);
    expect(upstream.sessionsOpened).toBe(stats.counters.opened);
  });

  it.each([
    ['grows past maxSize, up to growMaxSizeTo, to carry maxSize × clientLimit callers', { growMaxSizeTo: 8 }, 8],
    ['without growMaxSizeTo keeps maxSize, and so carries fewer callers', {}, 2],
  ] as const)('when the peer allows fewer streams than clientLimit, the pool %s', async (_what, grow, sessions) => {
    // Responses take long enough that no stream ends before the last session opens, however loaded the machine:
    // a stream that ended early would let a waiting caller in without the pool growing.
    const { pool, get, upstream } = await setup(
      { maxConcurrentStreams: 5, responseDelayMs: 500 },
      { maxSize: 2, clientLimit: 20, ...grow },
    );
    let most = 0;
    let widest = 0;
    const sample = setInterval(() => {
      most = Math.max(most, pool.stats().clients);
      widest = Math.max(widest, pool.stats().maxSize);
    }, 5);
    try {
      await Promise.all(Array.from({ length: 40 }, (_, i) => get(`/r/${i}`)));
    } finally {
      clearInterval(sample);
    }
    expect(upstream.sessionsOpened).toBe(sessions);
    expect(widest).toBe(sessions); // stats().maxSize shows the size it may reach now
    expect(most).toBeGreaterThan(sessions * 5 - 5); // each session as full as its peer allows
    expect(most).toBeLessThanOrEqual(sessions * 5);
    expect(pool.stats().connections.every((c) => c.clientLimit === 5)).toBe(true);
  });

  it('refuses a growMaxSizeTo below maxSize, saying what it is for', () => {
    expect(
      () =>
        new ConnectionPool(new Http2SessionConnector('http://127.0.0.1:1'), {
          name: 'p',
          maxSize: 4,
          growMaxSizeTo: 2,
        }),
    ).toThrow('pool "p": option "growMaxSizeTo" (2) must be at least maxSize (4): it is how far maxSize may grow');
  });

  it('retires sessions on GOAWAY: requests in flight finish, the next ones open a new session', async () => {
    const { pool, get, upstream } = await setup({ responseDelayMs: 50 });
    await get('/warm');
    const inFlight = Promise.all([get('/a'), get('/b')]);
    // Both at the server first: a GOAWAY that crosses a request refuses it (the next test's case).
    while (upstream.inflight < 2) await sleep(1);
    upstream.goawayAll();
    await expect(inFlight).resolves.toHaveLength(2);
    await expect(get('/after')).resolves.toEqual(expect.objectContaining({ path: '/after' }));
    expect(pool.stats().counters).toMatchObject({ opened: 2, retired: 1 });
  });

  it('retries a request the peer refused as its GOAWAY crossed it (REFUSED_STREAM) on another session', async () => {
    // The first stream of the first two sessions is refused with a GOAWAY that does not cover it:
    // the race of a request sent just as the peer closes an idle session (the sample app answered
    // it with a 500).
    const server = http2.createServer();
    let refusals = 2;
    server.on('session', (session) => session.on('error', () => {}));
    server.on('stream', (stream) => {
      stream.on('error', () => {});
      const session = stream.session!;
      if (refusals > 0) {
        refusals--;
        stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
        session.goaway(http2.constants.NGHTTP2_NO_ERROR, 0);
        session.close();
        return;
      }
      stream.respond({ ':status': 200 });
      stream.end('served');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    open.push({ close: () => new Promise((r) => server.close(r)) });
    const connector = new Http2SessionConnector(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    const pool = new ConnectionPool(connector, { name: 'refusing', maxSize: 2 });
    open.push({ close: () => pool.close({ graceMs: 1_000 }) });
    const request = (session: ClientHttp2Session) => http2Request(session, { ':path': '/x' });

    // Without retry the caller sees the refusal, and the session is retired, not reused.
    const refused = (await pool.use(request).catch((err: unknown) => err)) as Error;
    expect(refused).toMatchObject({ code: 'ERR_HTTP2_STREAM_ERROR' });
    expect(connector.isFatal(refused)).toBe(true);
    expect(pool.stats().counters.retired).toBe(1);
    // With retry, the caller never sees it: the next session serves the request.
    const answer = await pool.use(request, { retry: { attempts: 2 } });
    expect(answer.body.toString()).toBe('served');
    expect(pool.stats().counters).toMatchObject({ opened: 3, retired: 2 });
    // Any other stream error (a cancel, a reset by the peer mid-answer) may have been processed: not retried.
    expect(
      connector.isFatal(
        Object.assign(new Error('Stream closed with error code NGHTTP2_CANCEL'), { code: 'ERR_HTTP2_STREAM_ERROR' }),
      ),
    ).toBe(false);
  });

  it('closes a session whose peer sent GOAWAY and keeps the connection open, within closeTimeoutMs', async () => {
    // Node half-closes such a session's socket and waits for the peer's end, which this peer never
    // sends: the session's close never finished, and its socket stayed open for good.
    const server = http2.createServer();
    const sockets = new Set<import('node:net').Socket>();
    server.on('connection', (socket: import('node:net').Socket) => sockets.add(socket.on('error', () => {})));
    let first = true;
    server.on('session', (session) => {
      session.on('error', () => {});
      if (first) setTimeout(() => session.goaway(http2.constants.NGHTTP2_NO_ERROR), 50);
      first = false;
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    open.push({
      close: () => {
        for (const socket of sockets) socket.destroy();
        return new Promise((r) => server.close(r));
      },
    });
    const closes: number[] = [];
    const onClose = (m: unknown) => {
      if ((m as { pool: string }).pool === 'goaway') closes.push(performance.now());
    };
    subscribe(POOL_CHANNELS.close, onClose);
    open.push({ close: async () => unsubscribe(POOL_CHANNELS.close, onClose) });
    const connector = new Http2SessionConnector({
      origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      closeTimeoutMs: 300,
    });
    const pool = new ConnectionPool(connector, { name: 'goaway', logger: new RecordingLogger() });
    open.push({ close: () => pool.close() });
    await pool.use(() => undefined); // one session opened
    const opened = performance.now();
    while (closes.length === 0 && performance.now() - opened < 2_000) await sleep(20);
    expect(pool.stats().counters.retiredBy.connector).toBe(1);
    expect(pool.stats().lastError).toBeUndefined(); // a graceful GOAWAY is no error
    expect(closes).toHaveLength(1); // its close finished...
    expect(closes[0]! - opened).toBeLessThan(1_000); // ...by the GOAWAY (50 ms) and closeTimeoutMs (300 ms), not never
    const closing = performance.now();
    await pool.close();
    expect(performance.now() - closing).toBeLessThan(500);
  });

  it('reopens transparently after the peer drops idle sessions', async () => {
    const { pool, get, upstream } = await setup({ idleTimeoutMs: 100 });
    await get('/first');
    await sleep(250); // the upstream sends GOAWAY and closes the idle session
    expect(upstream.sessionsOpen).toBe(0);
    await expect(get('/second')).resolves.toEqual(expect.objectContaining({ path: '/second' }));
    expect(pool.stats().counters).toMatchObject({ opened: 2, retired: 1, createFailures: 0 });
  });

  it('answers a validation PING on a live session, and fails it on a closed one', async () => {
    const { pool } = await setup({});
    const connector = new Http2SessionConnector('http://127.0.0.1:1');
    const lease = await pool.acquire();
    const session = lease.connection;
    await expect(connector.validate(session)).resolves.toBe(true);
    await connector.close(session);
    await expect(connector.validate(session)).resolves.toBe(false);
    lease.release();
  });

  it('rejects an origin that is not an http(s) URL', () => {
    expect(() => new Http2SessionConnector('localhost:8443')).toThrow(
      'origin must be an https:// or http:// URL, got "localhost:8443"',
    );
  });

  it('fails the create (no session handed out) when nothing listens', async () => {
    const logger = new RecordingLogger();
    const pool = new ConnectionPool(new Http2SessionConnector('http://127.0.0.1:1'), {
      name: 'nowhere',
      acquireTimeoutMs: 300,
      logger,
    });
    open.push({ close: () => pool.close() });
    // Retried within the deadline (the refusal may be a restart), then the connect error as the cause.
    const failure = (await pool.acquire().catch((err: unknown) => err)) as Error;
    expect(failure).toMatchObject({ code: 'CONNECTIONS_EXHAUSTED', reason: 'creates-failing' });
    expect((failure.cause as Error).message).toContain('ECONNREFUSED');
    expect(pool.stats().counters.createFailures).toBeGreaterThan(1);
    expect(pool.stats().lastError).toContain('ECONNREFUSED');
    expect(logger.warnings[0]).toContain('ECONNREFUSED');
  });
});
