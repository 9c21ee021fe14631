import type { Connector, CreateContext } from '../../lib/index.js';

/** A connection the fake connector hands out. */
export interface FakeConnection {
  readonly id: number;
  closed: boolean;
  ctx: CreateContext;
}

/** What the next create (or ready) does. */
export type Step = { kind: 'ok' } | { kind: 'fail'; error?: unknown } | { kind: 'nothing' } | { kind: 'hold' };

interface Held<V> {
  ctx?: CreateContext;
  resolve: (v: V) => void;
  reject: (e: unknown) => void;
}

/**
 * A scriptable connector: each create and ready follows the next scripted step (default: ok
 * at once). Held steps wait until the test settles them. It counts everything it made and closed.
 */
export class FakeConnector implements Connector<FakeConnection> {
  /** The fake transport is declared safe to share, as an SDK client is: the pool's default clientLimit. */
  clientLimit: number | undefined = 100;
  created = 0;
  closedCount = 0;
  readyCalls = 0;
  readonly live = new Set<FakeConnection>();
  readonly createSteps: Step[] = [];
  readonly readySteps: Step[] = [];
  readonly heldCreates: Held<FakeConnection | undefined>[] = [];
  readonly heldReadies: Held<boolean>[] = [];
  validateResult: boolean | Error = true;
  validateCalls = 0;
  /** When set, validate() waits until the test calls releaseValidation(). */
  holdValidation = false;
  readonly heldValidations: Held<boolean>[] = [];
  fatal: (err: unknown) => boolean = () => false;
  #ids = 1;

  async create(ctx: CreateContext): Promise<FakeConnection> {
    const step = this.createSteps.shift() ?? { kind: 'ok' };
    const make = (): FakeConnection => {
      const conn: FakeConnection = { id: this.#ids++, closed: false, ctx };
      this.created++;
      this.live.add(conn);
      return conn;
    };
    switch (step.kind) {
      case 'ok':
        return make();
      case 'fail':
        throw step.error ?? new Error('connect ECONNREFUSED');
      case 'nothing':
        return undefined as unknown as FakeConnection;
      case 'hold': {
        const outcome = await new Promise<FakeConnection | undefined>((resolve, reject) =>
          this.heldCreates.push({ ctx, resolve, reject }),
        );
        return (outcome ?? make()) as FakeConnection;
      }
    }
  }

  async ready(): Promise<boolean> {
    this.readyCalls++;
    const step = this.readySteps.shift() ?? { kind: 'ok' };
    if (step.kind === 'fail') throw step.error ?? new Error('handshake failed');
    if (step.kind === 'nothing') return false;
    if (step.kind === 'hold')
      return new Promise<boolean>((resolve, reject) => this.heldReadies.push({ resolve, reject }));
    return true;
  }

  close(conn: FakeConnection): void {
    if (conn.closed) throw new Error(`connection ${conn.id} closed twice`);
    conn.closed = true;
    this.closedCount++;
    this.live.delete(conn);
  }

  validate(): boolean | Promise<boolean> {
    this.validateCalls++;
    if (this.holdValidation)
      return new Promise<boolean>((resolve, reject) => this.heldValidations.push({ resolve, reject }));
    if (this.validateResult instanceof Error) throw this.validateResult;
    return this.validateResult;
  }

  isFatal(err: unknown): boolean {
    return this.fatal(err);
  }

  /** The next `n` creates fail with `message` (a refused connect by default). */
  failCreates(n: number, message = 'connect ECONNREFUSED'): void {
    for (let i = 0; i < n; i++) this.createSteps.push({ kind: 'fail', error: new Error(message) });
  }

  /** Ids of the connections made and not yet closed, oldest first. */
  liveIds(): number[] {
    return [...this.live].map((c) => c.id);
  }

  /** Settles the oldest held create: with a new connection, or a failure. */
  releaseCreate(error?: unknown): void {
    const held = this.heldCreates.shift();
    if (!held) throw new Error('no held create');
    if (error === undefined) held.resolve(undefined);
    else held.reject(error);
  }

  releaseValidation(ok: boolean | Error = true): void {
    const held = this.heldValidations.shift();
    if (!held) throw new Error('no held validation');
    if (ok instanceof Error) held.reject(ok);
    else held.resolve(ok);
  }

  releaseReady(ok: boolean | Error = true): void {
    const held = this.heldReadies.shift();
    if (!held) throw new Error('no held ready');
    if (ok instanceof Error) held.reject(ok);
    else held.resolve(ok);
  }
}
