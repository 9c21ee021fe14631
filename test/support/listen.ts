import { once } from 'node:events';
import type { Server } from 'node:net';

/** Starts `server` on a free port of 127.0.0.1: its http:// origin. */
export async function listenLocal(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}
