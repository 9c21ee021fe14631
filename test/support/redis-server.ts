import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
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
    readonly tls: Certificates | undefined,
  ) {}

  /**
   * `extraArgs`: more redis-server arguments, e.g. `['--requirepass', 'secret']` or `['--replicaof', host, port]`.
   * `tls`: the server answers TLS only, on `port`, with these certificates (clients need not present one).
   */
  static async start(extraArgs: readonly string[] = [], tls?: Certificates): Promise<RedisServer> {
    const server = new RedisServer(await freePort(), extraArgs, tls);
    await server.start();
    return server;
  }

  get url(): string {
    return `${this.tls === undefined ? 'redis' : 'rediss'}://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const tls = this.tls;
    const ports =
      tls === undefined
        ? ['--port', String(this.port)]
        : [
            '--port',
            '0',
            '--tls-port',
            String(this.port),
            '--tls-cert-file',
            tls.certFile,
            '--tls-key-file',
            tls.keyFile,
            '--tls-ca-cert-file',
            tls.caFile,
            '--tls-auth-clients',
            'no',
          ];
    const args = [
      ...ports,
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      this.#dir,
      ...this.extraArgs,
    ];
    this.#process = await spawnUntil(args, 'Ready to accept connections');
  }

  /** `master` or `slave` (ROLE); `down` when it does not answer. */
  async role(): Promise<string> {
    const out = await cli(this, 'ROLE').catch(() => 'down');
    return out.split('\n')[0]!.trim();
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
    this.#process = undefined;
    await kill(child);
  }
}

/** Starts redis-server with `args`; resolves once it printed `ready`. */
async function spawnUntil(args: string[], ready: string): Promise<ChildProcess> {
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes(ready)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server ${args.join(' ')} exited with ${code}: ${out}`)));
  });
  child.stdout!.resume();
  return child;
}

/** Kills a child at once (SIGKILL) and waits for its exit. */
async function kill(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

/** A certificate authority and a server certificate it signed, for 127.0.0.1 and localhost. */
export interface Certificates {
  caFile: string;
  certFile: string;
  keyFile: string;
  /** The CA certificate (PEM), for a client's `tls.ca`. */
  ca: string;
}

/** Makes a throwaway CA and a server certificate with openssl (EC keys: fast). */
export async function certificates(): Promise<Certificates> {
  const dir = mkdtempSync(join(tmpdir(), 'tls-'));
  const at = (name: string) => join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await run('openssl', [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    at('ca.key'),
    '-out',
    at('ca.crt'),
    '-days',
    '2',
    '-subj',
    '/CN=nestjs-shared-pool test CA',
  ]);
  await run('openssl', ['req', ...ec, '-keyout', at('server.key'), '-out', at('server.csr'), '-subj', '/CN=localhost']);
  writeFileSync(at('san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    at('server.csr'),
    '-CA',
    at('ca.crt'),
    '-CAkey',
    at('ca.key'),
    '-CAcreateserial',
    '-out',
    at('server.crt'),
    '-days',
    '2',
    '-extfile',
    at('san.ext'),
  ]);
  return {
    caFile: at('ca.crt'),
    certFile: at('server.crt'),
    keyFile: at('server.key'),
    ca: readFileSync(at('ca.crt'), 'utf8'),
  };
}

/**
 * A Redis Sentinel of the test's own, watching `master` as `name` with a quorum of 1: it fails
 * over to a replica about `downAfterMs` after the master stops answering.
 */
export class RedisSentinel {
  #process: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    readonly name: string,
  ) {}

  static async start(master: RedisServer, name = 'mymaster', downAfterMs = 500): Promise<RedisSentinel> {
    const sentinel = new RedisSentinel(await freePort(), name);
    const dir = mkdtempSync(join(tmpdir(), 'sentinel-'));
    const conf = join(dir, 'sentinel.conf'); // Sentinel rewrites its file with what it learns
    writeFileSync(
      conf,
      [
        `port ${sentinel.port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${name} 127.0.0.1 ${master.port} 1`,
        `sentinel down-after-milliseconds ${name} ${downAfterMs}`,
        `sentinel failover-timeout ${name} ${downAfterMs * 4}`,
        '',
      ].join('\n'),
    );
    sentinel.#process = await spawnUntil([conf, '--sentinel'], '+monitor master');
    return sentinel;
  }

  /** The sentinels option of ioredis. */
  get sentinels(): { host: string; port: number }[] {
    return [{ host: '127.0.0.1', port: this.port }];
  }

  /** Asks the sentinel (`SENTINEL <args>`). */
  ask(...args: string[]): Promise<string> {
    return run('redis-cli', ['-p', String(this.port), 'SENTINEL', ...args], 1_000);
  }

  async stop(): Promise<void> {
    const child = this.#process;
    this.#process = undefined;
    await kill(child);
  }
}

/**
 * A Redis Cluster of the test's own: three masters, each with one replica, that fail over within
 * about `nodeTimeoutMs` of a master stopping.
 */
export class RedisCluster {
  private constructor(readonly servers: readonly RedisServer[]) {}

  static async start(nodeTimeoutMs = 1_000): Promise<RedisCluster> {
    const args = [
      '--cluster-enabled',
      'yes',
      '--cluster-node-timeout',
      String(nodeTimeoutMs),
      '--cluster-replica-validity-factor',
      '0',
    ];
    const servers = await Promise.all(Array.from({ length: 6 }, () => RedisServer.start(args)));
    const cluster = new RedisCluster(servers);
    const nodes = servers.map((s) => `127.0.0.1:${s.port}`);
    await run('redis-cli', ['--cluster', 'create', ...nodes, '--cluster-replicas', '1', '--cluster-yes']);
    await cluster.#untilHealthy();
    return cluster;
  }

  /** Startup nodes for ioredis: every master and replica. */
  get nodes(): { host: string; port: number }[] {
    return this.servers.map((s) => ({ host: '127.0.0.1', port: s.port }));
  }

  /** The server that is master of `key`'s slot now. */
  async masterOf(key: string): Promise<RedisServer> {
    for (const server of this.servers) {
      const info = await cli(server, 'CLUSTER', 'KEYSLOT', key).catch(() => undefined);
      if (info === undefined) continue;
      const slot = Number(info.trim());
      const slots = await cli(server, 'CLUSTER', 'SLOTS');
      // `redis-cli` prints CLUSTER SLOTS flat: start, end, master ip, master port, id, replicas...
      const lines = slots.trim().split('\n');
      for (let i = 0; i + 3 < lines.length; i++) {
        const [from, to] = [Number(lines[i]), Number(lines[i + 1])];
        if (
          Number.isInteger(from) &&
          Number.isInteger(to) &&
          lines[i + 2] === '127.0.0.1' &&
          from <= slot &&
          slot <= to
        ) {
          const port = Number(lines[i + 3]);
          const master = this.servers.find((s) => s.port === port);
          if (master !== undefined) return master;
        }
      }
    }
    throw new Error(`no master found for ${key}`);
  }

  /** Waits until every slot is served (after create, or a failover). */
  async #untilHealthy(timeoutMs = 20_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const states = await Promise.all(this.servers.map((s) => cli(s, 'CLUSTER', 'INFO').catch(() => '')));
      if (states.filter((s) => s.includes('cluster_state:ok')).length >= 5) return;
      if (Date.now() > end) throw new Error(`the cluster did not become healthy: ${states.join(' | ')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async stop(): Promise<void> {
    for (const s of this.servers) s.resume();
    await Promise.all(this.servers.map((s) => s.stop()));
  }
}

function cli(server: RedisServer, ...args: string[]): Promise<string> {
  return run('redis-cli', ['-p', String(server.port), ...args], 1_000);
}

/** Runs a command; a paused server would make redis-cli wait forever, so it is killed after `ms`. */
function run(command: string, args: string[], ms = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    child.once('exit', () => clearTimeout(timer));
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${command} ${args.join(' ')} exited with ${code}: ${out}`)),
    );
  });
}
