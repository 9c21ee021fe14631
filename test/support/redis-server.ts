import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A free TCP port on loopback. */
async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}

/**
 * A redis-server of the test's own (the machine's binary), so a test can stop and restart it
 * without disturbing the shared one on 6379. Nothing is persisted: a restart forgets every key.
 */
export class RedisServer {
  #process: ChildProcess | undefined;
  readonly #dir = mkdtempSync(join(tmpdir(), 'redis-'));

  private constructor(
    readonly port: number,
    readonly extraArgs: readonly string[],
  ) {}

  /** `extraArgs`: more redis-server arguments, e.g. `['--requirepass', 'secret']` or `['--replicaof', host, port]`. */
  static async start(extraArgs: readonly string[] = []): Promise<RedisServer> {
    const server = new RedisServer(await freePort(), extraArgs);
    await server.start();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.#dir, ...this.extraArgs];
    const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    this.#process = child;
    let out = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('Ready to accept connections')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`redis-server exited with ${code}: ${out}`)));
    });
    child.stdout!.resume();
  }

  /** Freezes the server (SIGSTOP): connections stay open, nothing is answered, data is kept. */
  pause(): void {
    this.#process?.kill('SIGSTOP');
  }

  /** Lets a paused server run again (SIGCONT); it then answers what was sent meanwhile. */
  resume(): void {
    this.#process?.kill('SIGCONT');
  }

  /** Kills the server at once (like a crash); its data is gone. */
  async stop(): Promise<void> {
    const child = this.#process;
    if (child === undefined || child.exitCode !== null) return;
    this.#process = undefined;
    const exited = once(child, 'exit');
    child.kill('SIGKILL');
    await exited;
  }
}
