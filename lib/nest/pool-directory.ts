import { ConnectionPool, PoolConfigError } from '../core/index.js';

interface Entry {
  readonly pool: ConnectionPool<unknown>;
  /** The application that registered the pool. */
  readonly app: object;
}

/**
 * Every pool the `PoolModule` made in this process, by name. `@UsePooled` looks pools up here at
 * call time, so a decorated method needs no injected field and works in any provider.
 *
 * Several applications in one process (tests do this) may each have a pool of the same name: a
 * lookup takes the most recently made one that is still open.
 */
class PoolDirectory {
  readonly #byName = new Map<string, Entry[]>();

  /** Adds a pool made by `app`; a second open pool of the same name in the same app is an error. */
  add(pool: ConnectionPool<unknown>, app: object): void {
    const entries = this.#byName.get(pool.name) ?? [];
    if (entries.some((e) => e.app === app && !e.pool.closed)) {
      throw new PoolConfigError(pool.name, 'name', 'is used by two pools of this application; give every pool its own name');
    }
    entries.push({ pool, app });
    this.#byName.set(pool.name, entries);
  }

  remove(pool: ConnectionPool<unknown>): void {
    const entries = this.#byName.get(pool.name)?.filter((e) => e.pool !== pool) ?? [];
    if (entries.length > 0) this.#byName.set(pool.name, entries);
    else this.#byName.delete(pool.name);
  }

  /** The newest open pool named `name`. */
  find(name: string): ConnectionPool<unknown> | undefined {
    const entries = this.#byName.get(name);
    if (entries === undefined) return undefined;
    for (let i = entries.length - 1; i >= 0; i--) if (!entries[i].pool.closed) return entries[i].pool;
    return undefined;
  }

  /** Names of the open pools. */
  names(): string[] {
    return [...this.#byName.keys()].filter((name) => this.find(name) !== undefined);
  }

  /** The pools `app` made, in the order it made them. */
  ofApp(app: object): ConnectionPool<unknown>[] {
    const pools: ConnectionPool<unknown>[] = [];
    for (const entries of this.#byName.values()) for (const e of entries) if (e.app === app) pools.push(e.pool);
    return pools;
  }
}

/** @internal The process-wide directory. */
export const poolDirectory = new PoolDirectory();
