// Specs whose verdict reads real timers across several processes (a fleet of workers on one
// machine) must not run beside each other in Jest's two workers: on two cores, seven processes
// measure the scheduler, not the limit. Each takes a turn on the machine, a directory made
// atomically in the OS's temporary directory; a turn whose holder died is taken over.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Waits until no other process holds the turn `name`, then holds it: the returned function lets
 * it go. Throws after `timeoutMs` with the holder's pid.
 */
export async function machineTurn(name: string, timeoutMs = 120_000): Promise<() => void> {
  const dir = join(tmpdir(), `nestjs-shared-pool-turn-${name}`);
  const owner = join(dir, 'pid');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      mkdirSync(dir);
      writeFileSync(owner, String(process.pid));
      return () => rmSync(dir, { recursive: true, force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let holder = NaN;
    try {
      holder = Number(readFileSync(owner, 'utf8'));
    } catch {
      // made, its pid not yet written: the holder is alive
    }
    if (Number.isInteger(holder) && !alive(holder)) rmSync(dir, { recursive: true, force: true });
    else if (Date.now() > deadline)
      throw new Error(`the machine turn "${name}" is still held by process ${holder} after ${timeoutMs} ms (${dir})`);
    else await sleep(200);
  }
}
