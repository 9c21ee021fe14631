// Azurite, the Azure Storage emulator (npm package), as a child process holding its data in memory.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';

export interface Azurite {
  /** `http://127.0.0.1:<port>`: the blob endpoint without the account. */
  readonly blobEndpoint: string;
  stop(): Promise<void>;
}

/** Starts Azurite's blob service on a free port; resolves once it listens. */
export async function startAzurite(): Promise<Azurite> {
  const main = createRequire(import.meta.url).resolve('azurite/dist/src/blob/main.js');
  const args = [
    '--inMemoryPersistence',
    '--skipApiVersionCheck',
    '--disableTelemetry',
    '--silent',
    '--blobHost',
    '127.0.0.1',
    '--blobPort',
    '0',
  ];
  const child: ChildProcess = spawn(process.execPath, [main, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const blobEndpoint = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const listening = /successfully listens on (http:\/\/[\d.]+:\d+)/.exec(output);
      if (listening) resolve(listening[1]);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`Azurite exited (${code}) before it listened: ${output}`)));
  });
  child.stdout!.resume();
  child.stderr!.resume();
  return {
    blobEndpoint,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}
