// The README's core example: a pool of HTTP/2 sessions, each shared by up to 100 requests.
// Runs against a local HTTP/2 server, so it needs nothing else: `npm run example`.
import { once } from 'node:events';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { ConnectionPool, http2Request } from '../lib/index.js';
import { http2Connector } from './http2-connector.js';

export async function main(requests = 500) {
  const server = http2.createServer((req, res) => res.end(`hello ${req.url}`));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const pool = new ConnectionPool(http2Connector(origin), {
    name: 'upstream',
    maxSize: 4, // at most 4 sessions ...
    clientLimit: 100, // ... each carrying up to 100 requests at once
    maxIdleMs: 30_000,
  });

  const bodies = await Promise.all(
    Array.from({ length: requests }, (_, i) =>
      pool.use(async (session) => (await http2Request(session, { ':path': `/item/${i}` })).body.toString(), {
        retry: { attempts: 2 },
      }),
    ),
  );
  const stats = pool.stats();
  console.log(`${bodies.length} requests over ${stats.counters.opened} sessions; health ${stats.health}`);

  await pool.close();
  server.close();
  return { bodies, stats };
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) await main();
