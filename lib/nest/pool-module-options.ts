import type { InjectionToken, ModuleMetadata, OptionalFactoryDependency, Provider, Type } from '@nestjs/common';
import type { Connector, PoolOptions } from '../core/index.js';
import type { PoolGroupOptions } from '../groups/index.js';
import type { LimitsConfig } from './module-limiters.js';
import type { RequestClassFn, RequestKeyFn } from './request-key.js';

export type { LimitsConfig } from './module-limiters.js';

/** A pool's options as the module takes them: the name comes from the pool's entry. */
export interface PooledOptions extends Omit<PoolOptions, 'name' | 'limiter'> {
  /** Admission limits of this pool alone (else the registration's `limits`, if any). */
  limits?: LimitsConfig;
}

/** A connector made by a factory, which may inject providers. */
export interface ConnectorFactory<T = unknown> {
  useFactory: (...deps: never[]) => Connector<T> | Promise<Connector<T>>;
  inject?: (InjectionToken | OptionalFactoryDependency)[];
}

/**
 * Where a pool's connector comes from: a class (Nest makes it, injecting its constructor's
 * dependencies), an instance, or a factory.
 */
export type ConnectorSource<T = unknown> = Type<Connector<T>> | Connector<T> | ConnectorFactory<T>;

/** One pool of an async registration: its options come from the module's factory. */
export interface AsyncPoolDefinition<T = unknown> {
  /** Unique in the application; `getPoolToken(name)` and `@UsePooled(name)` use it. */
  name: string;
  connector: ConnectorSource<T>;
}

/** One pool of `PoolModule.forRoot()`. */
export interface PoolDefinition<T = unknown> extends AsyncPoolDefinition<T> {
  options?: PooledOptions;
}

/** A pool group's options as the module takes them: the name and the connectors come from the group's entry. */
export type GroupedOptions = Omit<PoolGroupOptions<unknown>, 'name' | 'connector' | 'clock' | 'logger'>;

/** The connector of each member of a group, made from its key: `(tenant) => new PgConnector(urlOf(tenant))`. */
export type MemberConnectors<T = unknown> = (key: string) => Connector<T>;

/** Where a group's member connectors come from: a function of the key, or a factory (which may inject providers) that returns one. */
export type GroupConnectorSource<T = unknown> =
  | MemberConnectors<T>
  | {
      useFactory: (...deps: never[]) => MemberConnectors<T> | Promise<MemberConnectors<T>>;
      inject?: (InjectionToken | OptionalFactoryDependency)[];
    };

/** One pool group of an async registration: its options come from the module's factory (`groups: { [name]: options }`). */
export interface AsyncGroupDefinition<T = unknown> {
  /** Unique in the application among pools and groups; `@UsePooled(name, { key })` and `@InjectPool(name)` use it. */
  name: string;
  connector: GroupConnectorSource<T>;
}

/** One pool group of `PoolModule.forRoot({ groups })`: many pools, one per key, sharing `maxTotal` connections. */
export interface GroupDefinition<T = unknown> extends AsyncGroupDefinition<T> {
  options: GroupedOptions;
}

/**
 * Options per name. An array (the shape `forRoot` and TypeORM's factories take) does not fit, and
 * TypeScript's error then shows `Hint`, where the names and connectors belong: arrays have an
 * iterator, a record of options has none.
 */
export type OptionsByName<T, Hint extends string> = { readonly [name: string]: T } & {
  readonly [Symbol.iterator]?: Hint;
};

/** Settings that may come from an async factory. */
export interface PoolModuleSettings {
  /** Options per pool name, for `forRootAsync`. `forRoot` takes them on each pool instead. */
  pools?: OptionsByName<
    PooledOptions,
    "forRootAsync's factory gives pools as { [name]: options }; each pool's name and connector go in forRootAsync({ pools: [{ name, connector }], useFactory })"
  >;
  /** Options per group name, for `forRootAsync`. `forRoot` takes them on each group instead. */
  groups?: OptionsByName<
    GroupedOptions,
    "forRootAsync's factory gives groups as { [name]: options }; each group's name and connector go in forRootAsync({ groups: [{ name, connector }], useFactory })"
  >;
  /** Admission limits shared by every pool of this registration that has none of its own. */
  limits?: LimitsConfig;
  /** Stop start-up when a pool cannot open its `minSize` connections. Default false: log and go on. */
  failOnWarmupError?: boolean;
  /** On application shutdown, how long leases get to finish before connections close. Default 10 000. */
  shutdownGraceMs?: number;
}

/** What shapes the module itself, so never async. */
export interface StaticSettings {
  /**
   * Makes the pools injectable in every module, as TypeORM's and BullMQ's `forRoot` do. Default
   * true; `false`: only modules that import this registration inject them. `PoolHealthIndicator`
   * is injectable everywhere either way.
   */
  isGlobal?: boolean;
  /** Answer pool errors on HTTP with 429/503 and `Retry-After` (registers `PoolErrorFilter` app-wide). Default false. */
  httpErrors?: boolean;
  /** Modules whose providers the connectors or the factory inject. */
  imports?: ModuleMetadata['imports'];
  /**
   * Takes the admission key of every `@UsePooled` call from the request being handled (an
   * interceptor reads it once per request, after the guards): `(ctx) =>
   * ctx.switchToHttp().getRequest().user?.id`. A method's own `key()` wins; `key: false` opts a
   * method out. Undefined: the request has no key. One per application: set it in `forRoot`.
   */
  requestKey?: RequestKeyFn;
  /**
   * Takes the priority class of every `@UsePooled` call from the request being handled, for a
   * limiter with `classes`: `(ctx) => (ctx.switchToHttp().getRequest().user?.plan === 'pro' ?
   * 'live' : 'batch')`. A method's own `class` wins. Undefined: the limiter's default class. Set
   * in the same registration as `requestKey`.
   */
  requestClass?: RequestClassFn;
  /** Providers added to the module, for the connectors or the factory to inject (as `TypeOrmModule.forRootAsync` has them). */
  extraProviders?: Provider[];
}

/** Options of `PoolModule.forRoot()`: pools, groups, or both. */
export interface PoolModuleOptions extends StaticSettings, Omit<PoolModuleSettings, 'pools' | 'groups'> {
  pools?: PoolDefinition[];
  groups?: GroupDefinition[];
}

/** Options of `PoolModule.forFeature(pools, settings)`: the registration's own, never global, and no `requestKey` (the root's is the application's). */
export type PoolFeatureSettings = Omit<PoolModuleOptions, 'pools' | 'isGlobal' | 'requestKey' | 'requestClass'>;

/** Options of `PoolModule.forFeatureAsync()`: as forRootAsync's, never global and with no `requestKey`. */
export type PoolFeatureAsyncOptions = Omit<PoolModuleAsyncOptions, 'isGlobal' | 'requestKey' | 'requestClass'>;

/** Makes {@link PoolModuleSettings} for `forRootAsync({ useClass })` or `useExisting`. */
export interface PoolSettingsFactory {
  createPoolSettings(): PoolModuleSettings | Promise<PoolModuleSettings>;
}

/** Options of `PoolModule.forRootAsync()`: pool names and connectors are static, their options async. */
export interface PoolModuleAsyncOptions extends StaticSettings {
  pools?: AsyncPoolDefinition[];
  groups?: AsyncGroupDefinition[];
  useFactory?: (...deps: never[]) => PoolModuleSettings | Promise<PoolModuleSettings>;
  inject?: (InjectionToken | OptionalFactoryDependency)[];
  useClass?: Type<PoolSettingsFactory>;
  useExisting?: Type<PoolSettingsFactory>;
}
