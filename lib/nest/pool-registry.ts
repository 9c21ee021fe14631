import { Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { PoolConfigError, type UseOptions } from '../core/index.js';
import { PoolGroup } from '../groups/index.js';
import { withRequestKeys, type PoolLike } from './request-key.js';
import { getPoolToken } from './tokens.js';

export type { PoolLike } from './request-key.js';

/**
 * The pool names of one application. Every `PoolModule` import (forRoot, forRootAsync,
 * forFeature) declares its names here; `@UsePooled` methods and the health indicator then take
 * each pool from DI by its token, so a provider overridden in a test (`overrideProvider`,
 * `useValue`) is the one they use. One instance per application (a global module provides it):
 * applications in one process never see each other's pools.
 */
@Injectable()
export class PoolRegistry {
  /** Name → the registration that declared it. */
  readonly #owners = new Map<string, object>();
  readonly #pools = new Map<string, PoolLike>();
  /** Name → the provider DI gave (a pool, a group, or a test's stand-in). */
  readonly #providers = new Map<string, unknown>();
  /** The pools as decorated methods see them, when calls take their request's key. */
  readonly #forMethods = new Map<string, PoolLike>();
  /** The registration whose `requestKey` the application uses, if any. */
  #requestKeysBy: string | undefined;

  constructor(private readonly moduleRef: ModuleRef) {}

  /** Names a `forFeature` registration declared: only modules that import it may use them. */
  readonly #features = new Set<string>();

  /** Declares `name` for `owner` (one registration); a name declared by another registration is an error. */
  declare(name: string, owner: object, feature = false): void {
    const known = this.#owners.get(name);
    if (known !== undefined && known !== owner) {
      throw new PoolConfigError(name, 'name', 'is used by two pools of this application; give every pool its own name');
    }
    this.#owners.set(name, owner);
    if (feature) this.#features.add(name);
  }

  /** Whether `name` is a `forFeature` pool (seen only by the modules that import its registration). */
  isFeature(name: string): boolean {
    return this.#features.has(name);
  }

  /**
   * Makes decorated methods take their request's key and class (one registration of the
   * application may set `requestKey` and `requestClass`); `field`: the one it sets, for errors.
   */
  takeRequestKeys(method: string, field: 'requestKey' | 'requestClass' = 'requestKey'): void {
    if (this.#requestKeysBy !== undefined) {
      throw new PoolConfigError(
        method,
        field,
        `is already set by ${this.#requestKeysBy}; an application reads its requests once: set requestKey and requestClass in one registration`,
        'module',
      );
    }
    this.#requestKeysBy = method;
  }

  /** The pool a decorated method of this application calls: `get(name)`, taking the request's key if `requestKey` is set. */
  forMethods(name: string): PoolLike | undefined {
    const pool = this.get(name);
    if (pool === undefined || this.#requestKeysBy === undefined) return pool;
    let keyed = this.#forMethods.get(name);
    if (keyed === undefined) this.#forMethods.set(name, (keyed = withRequestKeys(pool)));
    return keyed;
  }

  /** The declared names, in the order they were declared. */
  names(): string[] {
    return [...this.#owners.keys()];
  }

  /**
   * The provider of `getPoolToken(name)` as DI resolves it (overrides included), or undefined when
   * no pool has the name. A provider of the token that no registration declared counts too (a
   * testing module's `{ provide: getPoolToken('db'), useValue }` beside `PoolModule.forTesting()`). A pool group is seen as a pool whose calls pick their member by key.
   */
  get(name: string): PoolLike | undefined {
    const known = this.#pools.get(name);
    if (known !== undefined) return known;
    const provider = this.#provider(name);
    if (provider === undefined) return undefined;
    const pool = provider instanceof PoolGroup ? groupAsPool(provider) : (provider as PoolLike);
    this.#pools.set(name, pool);
    return pool;
  }

  /** The group named `name`, if that name is a group's. */
  group(name: string): PoolGroup<unknown> | undefined {
    const provider = this.#provider(name);
    return provider instanceof PoolGroup ? provider : undefined;
  }

  /** The pool or group named `name` that its registration made, if it made it. */
  #made(name: string): unknown {
    const owner = this.#owners.get(name) as Made | undefined;
    return owner?.pools?.find((p) => p.name === name) ?? owner?.groups?.find((g) => g.name === name);
  }

  /** The provider of `name`, looked up once (the health check asks on every call). */
  #provider(name: string): unknown {
    const known = this.#providers.get(name);
    if (known !== undefined) return known;
    let provider: unknown;
    try {
      provider = this.moduleRef.get<unknown>(getPoolToken(name), { strict: false });
    } catch {
      // Not found by DI: a module loaded lazily (LazyModuleLoader) after start, which
      // moduleRef.get() does not search, or start-up failed before the provider was made.
      provider = this.#made(name);
      if (provider === undefined) return undefined;
    }
    this.#providers.set(name, provider);
    return provider;
  }
}

/** What a registration made, as ModulePools lists it. */
interface Made {
  readonly pools?: readonly { readonly name: string }[];
  readonly groups?: readonly { readonly name: string }[];
}

/** A group as decorated methods call it: the call's key (the method's `key()`, or the request's) names the member. */
function groupAsPool(group: PoolGroup<unknown>): PoolLike {
  return {
    use: (fn, options?: UseOptions) => {
      const key = options?.key;
      if (typeof key !== 'string') {
        const how = `@UsePooled('${group.name}', { key: (tenant) => tenant }), or the module's requestKey`;
        return Promise.reject(
          new PoolConfigError(
            group.name,
            'key',
            `is needed by every call of a pool group: it names the member (a tenant, a database); give the call one: ${how}`,
            'group',
          ),
        );
      }
      return group.use(key, fn, options);
    },
  };
}
