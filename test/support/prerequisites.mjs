// Jest's global setup: before any test runs, the Prisma spec's generated client, and what the
// suite needs that a machine of this project's kind may not be running or may not have installed
// (the services, Debian's Chromium). Missing
// parts are started or installed by scripts/test-prerequisites.sh when Jest runs as root; anyone
// else gets, at once, the one command to run.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { generatePrisma } from '../../scripts/generate-prisma.mjs';

const SERVICES = [
  ['Redis', 6379],
  ['PostgreSQL', 5432],
  ['MariaDB', 3306],
  ['RabbitMQ', 5672],
];
const script = fileURLToPath(new URL('../../scripts/test-prerequisites.sh', import.meta.url));

/** Whether something answers on 127.0.0.1:`port` within half a second. */
const answers = (port) =>
  new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });

async function missing() {
  const down = [];
  for (const [name, port] of SERVICES) if (!(await answers(port))) down.push(`${name} (127.0.0.1:${port})`);
  const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
  if (!existsSync(chromium)) down.push(`Chromium (${chromium}, Debian's chromium package)`);
  return down;
}

export default async function prerequisites() {
  generatePrisma(); // the Prisma spec's client, made offline (scripts/generate-prisma.mjs)
  let down = await missing();
  if (down.length === 0) return;
  const root = process.getuid?.() === 0;
  if (root && process.env.CHROMIUM_PATH === undefined) {
    console.log(`\nnpm test: starting or installing what is missing (${down.join(', ')}) with ${script}`);
    try {
      execFileSync(script, { stdio: 'inherit' });
    } catch {
      // said below, with what is still missing
    }
    down = await missing();
    if (down.length === 0) return;
  }
  throw new Error(
    `npm test needs ${down.join(', ')}, and ${down.length === 1 ? 'it is' : 'they are'} not there. Run\n\n` +
      `  sudo ${script}\n\n` +
      "which starts the services that are down and installs Debian's chromium, then npm test again.",
  );
}
