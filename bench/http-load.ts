/**
 * A load generator in a process of its own, for a server measured end to end: told a port and a
 * number of requests over IPC, it makes them with `callers` at once on keep-alive sockets and
 * answers the rate. Its promises are not the server's: a promise hook the server's process pays
 * (an AsyncLocalStorage scope on Node 20 and 22) is not charged to the client's work.
 */
import { Agent, get } from 'node:http';
import { callRound } from './fresh-process.js';

const [port, callers, path] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4] ?? '/'];
const agent = new Agent({ keepAlive: true, maxSockets: callers });
const request = () =>
  new Promise<void>((resolve, reject) => {
    get({ host: '127.0.0.1', port, path, agent }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
    }).on('error', reject);
  });
const round = callRound(callers, request);
process.on('message', (total: number) => {
  round(total).then(
    (rate) => process.send!(rate),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
});
process.on('disconnect', () => {
  agent.destroy();
  process.exit(0);
});
