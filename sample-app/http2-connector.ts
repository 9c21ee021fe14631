// A minimal connector for HTTP/2 sessions, shown in the README as an example of writing one; the
// core example uses it. The package's Http2SessionConnector is the complete one.
import { once } from 'node:events';
import http2 from 'node:http2';
import type { Connector } from '../lib/index.js';

/** Opens one HTTP/2 session to `origin`; ready once the peer's SETTINGS arrived. */
export function http2Connector(origin: string): Connector<http2.ClientHttp2Session> {
  return {
    async create({ signal, retire }) {
      const session = http2.connect(origin);
      session.on('error', retire); // a broken session is retired, never thrown at callers
      session.on('goaway', () => retire('GOAWAY'));
      try {
        await once(session, 'connect', { signal }); // rejects on 'error' or when the pool aborts
      } catch (err) {
        session.destroy();
        throw err;
      }
      return session;
    },
    ready: async (session) => {
      if (!session.remoteSettings) await once(session, 'remoteSettings');
    },
    close: (session) => new Promise<void>((resolve) => session.close(() => resolve())),
    isFatal: (err) => (err as NodeJS.ErrnoException).code === 'ERR_HTTP2_INVALID_SESSION',
  };
}
