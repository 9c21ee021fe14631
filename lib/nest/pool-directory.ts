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
 * Several applications in one process (tests do this) may each have a pool of the same name. A
 * call on an instance that Nest made for an application uses that application's pool; other
 * callers (request-scoped instances, objects Nest did not make) get the newest open one.
 */
class PoolDirectory {
  readonly #byName = new Map<string, Entry[]>();
  /** Which application made each provider and controller instance. */
  readonly #apps = new WeakMap<object, object>();

  /** Records that `app` made `instance`, so its decorated methods use `app`'s pools. */
  claim(instance: object, app: object): void {
    this.#apps.set(instance, app);
  }

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

  /** The open pool named `name` of the application that made `caller`, else the newest open one. */
  find(name: string, caller?: unknown): ConnectionPool<unknown> | undefined {
    const entries = this.#byName.get(name);
    if (entries === undefined) return undefined;
    const app = typeof caller === 'object' && caller !== null ? this.#apps.get(caller) : undefined;
    let newest: ConnectionPool<unknown> | undefined;
    for (let i = entries.length - 1; i >= 0; i--) {
      const { pool, app: owner } = entries[i];
      if (pool.closed) continue;
      if (owner === app) return pool;
      newest ??= pool;
    }
    return newest;
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
