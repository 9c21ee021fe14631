// A TCP proxy in front of a real server (PostgreSQL: counting the statements it receives) that
// can go down and come back, as a server restart looks to its clients: every session cut, connects
// refused, then accepted again. The suite's other files share the server, so it is never restarted.
import net from 'node:net';

/** The frontend message types that run a statement: a simple Query, an Execute of the extended protocol. */
const STATEMENT_TYPES = new Set(['Q', 'E']);
const SSL_REQUEST = 80877103;

export class TcpProxy {
  /** Statements the server received through the proxy. */
  statements = 0;
  /** The text of each simple query, in order (extended-protocol statements are counted only). */
  readonly queries: string[] = [];
  readonly #sockets = new Set<net.Socket>();
  #server: net.Server | undefined;

  private constructor(
    readonly port: number,
    readonly target: { host: string; port: number },
    /** Whether the stream is PostgreSQL's, whose statements it counts. */
    readonly counts: boolean,
  ) {}

  /** A proxy to `target`; one to another server than PostgreSQL (`counts: false`) only relays, cuts and refuses. */
  static async start(target = { host: '127.0.0.1', port: 5432 }, counts = target.port === 5432): Promise<TcpProxy> {
    const probe = net.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const proxy = new TcpProxy(port, target, counts);
    await proxy.up();
    return proxy;
  }

  /** A connection string to the `test` database through the proxy. */
  get url(): string {
    return `postgresql://postgres@127.0.0.1:${this.port}/test`;
  }

  /** Accepts connections again. */
  async up(): Promise<void> {
    if (this.#server !== undefined) return;
    const server = net.createServer((client) => this.#relay(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.#server = server;
  }

  /** Cuts every session and refuses new connects until `up()`. */
  async down(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Refuses new connects until `up()`, keeping the sessions open. */
  refuse(): void {
    const server = this.#server;
    this.#server = undefined;
    server?.close(); // stops listening now; its callback would wait for the sessions to end
  }

  /** Sessions open through the proxy now. */
  get sessions(): number {
    return this.#sockets.size / 2;
  }

  close(): Promise<void> {
    return this.down();
  }

  #relay(client: net.Socket): void {
    const server = net.connect(this.target.port, this.target.host);
    for (const socket of [client, server]) {
      this.#sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        this.#sockets.delete(socket);
        client.destroy();
        server.destroy();
      });
    }
    const count = this.counts ? this.#counter() : undefined;
    client.on('data', (chunk: Buffer) => {
      count?.(chunk);
      server.write(chunk);
    });
    server.on('data', (chunk: Buffer) => client.write(chunk));
  }

  /** Parses the frontend stream: a startup message without a type byte, then typed messages. */
  #counter(): (chunk: Buffer) => void {
    let buffered = Buffer.alloc(0);
    let started = false;
    return (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        if (!started) {
          if (buffered.length < 8) return;
          const length = buffered.readInt32BE(0);
          if (buffered.length < length) return;
          started = buffered.readInt32BE(4) !== SSL_REQUEST;
          buffered = buffered.subarray(length);
          continue;
        }
        if (buffered.length < 5) return;
        const length = buffered.readInt32BE(1);
        if (buffered.length < 1 + length) return;
        const type = String.fromCharCode(buffered[0]!);
        if (STATEMENT_TYPES.has(type)) this.statements++;
        if (type === 'Q') this.queries.push(buffered.subarray(5, length).toString('utf8').replace(/\0$/, ''));
        buffered = buffered.subarray(1 + length);
      }
    };
  }
}
