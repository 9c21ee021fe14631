import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR } from '@nestjs/core';
import { ConnectionPool, PoolConfigError, type Connector } from '../core/index.js';
import { NestPoolLogger } from './nest-pool-logger.js';
import { PoolCoreModule } from './pool-core.module.js';
import { PoolErrorFilter } from './pool-error.filter.js';
import { ModulePools, PoolLifecycle } from './pool-lifecycle.js';
import { PoolRegistry } from './pool-registry.js';
import { RequestKeyInterceptor } from './request-key.js';
import { PoolGroup } from '../groups/index.js';
import {
  type AsyncGroupDefinition,
  type AsyncPoolDefinition,
  type GroupDefinition,
  type MemberConnectors,
  type PoolDefinition,
  type PoolFeatureAsyncOptions,
  type PoolFeatureSettings,
  type PoolModuleAsyncOptions,
  type PoolModuleOptions,
  type PoolModuleSettings,
  type PoolSettingsFactory,
} from './pool-module-options.js';
import { ModuleLimiters } from './module-limiters.js';
import { checkFeatureSettings, checkRegistration, checkSettings, isConnectorFactory } from './registration-checks.js';
import { getConnectorToken, getPoolToken, MODULE_LIMITERS, MODULE_POOLS, POOL_MODULE_SETTINGS } from './tokens.js';

/**
 * Registers pools of shared connections: one provider per pool (`@InjectPool(name)`), warm-up
 * on start, graceful close on shutdown, `PoolHealthIndicator`, and optional HTTP error mapping.
 */
@Module({})
export class PoolModule {
  /** Registers pools whose options are known up front. */
  static forRoot(options: PoolModuleOptions): DynamicModule {
    checkRegistration(options, 'forRoot');
    return fromOptions(options, 'forRoot');
  }

  /**
   * Registers a feature module's own pools, the way `TypeOrmModule.forFeature` registers
   * repositories: their tokens are visible to the importing module, their names unique in the
   * application, and the health indicator reports them with every other pool.
   */
  static forFeature(pools: PoolDefinition[], settings: PoolFeatureSettings = {}): DynamicModule {
    if (typeof settings !== 'object' || settings === null) {
      throw new PoolConfigError(
        'PoolModule.forFeature',
        'settings',
        'must be an object: { limits?, failOnWarmupError?, shutdownGraceMs?, imports? }',
        'module',
      );
    }
    for (const field of ['requestKey', 'requestClass'] as const) {
      if ((settings as PoolModuleOptions)[field] !== undefined) {
        throw new PoolConfigError(
          'PoolModule.forFeature',
          field,
          'is set once per application, in PoolModule.forRoot or forRootAsync; it applies to the pools of forFeature too',
          'module',
        );
      }
    }
    checkFeatureSettings(settings);
    const registration: PoolModuleOptions = { ...settings, pools, isGlobal: false };
    checkRegistration(registration, 'forFeature');
    return fromOptions(registration, 'forFeature');
  }

  /**
   * For a testing module that provides pools itself (`{ provide: getPoolToken('db'), useValue:
   * pool }`) without registering them: binds `@UsePooled` methods to those providers, as a
   * registration would. Registers no pool and closes nothing.
   */
  static forTesting(): DynamicModule {
    return { module: PoolModule, imports: [PoolCoreModule] };
  }

  /** Registers pools whose options come from a factory (`useFactory`, `useClass` or `useExisting`). */
  static forRootAsync(options: PoolModuleAsyncOptions): DynamicModule {
    return fromAsync(options, 'forRootAsync');
  }

  /**
   * A feature module's own pools whose options come from a factory, as `forFeature` is to
   * `forRoot`: never global, and no `requestKey` (the root's is the application's).
   */
  static forFeatureAsync(options: PoolFeatureAsyncOptions): DynamicModule {
    for (const field of ['requestKey', 'requestClass'] as const) {
      if (typeof options === 'object' && options !== null && (options as PoolModuleAsyncOptions)[field] !== undefined) {
        throw new PoolConfigError(
          'PoolModule.forFeatureAsync',
          field,
          'is set once per application, in PoolModule.forRoot or forRootAsync; it applies to the pools of forFeatureAsync too',
          'module',
        );
      }
    }
    return fromAsync(options, 'forFeatureAsync');
  }
}

function fromAsync(options: PoolModuleAsyncOptions, method: 'forRootAsync' | 'forFeatureAsync'): DynamicModule {
  checkRegistration(options, method);
  (options.pools ?? []).forEach((pool) => {
    if ((pool as PoolDefinition).options !== undefined) {
      throw new PoolConfigError(
        pool.name,
        'options',
        `is not taken by ${method}: pool options come from its factory ({ pools: { [name]: options } }); move them there, or register with forRoot`,
        'pool',
      );
    }
  });
  (options.groups ?? []).forEach((group) => {
    if ((group as GroupDefinition).options !== undefined) {
      throw new PoolConfigError(
        group.name,
        'options',
        `is not taken by ${method}: group options come from its factory ({ groups: { [name]: options } }); move them there, or register with forRoot`,
        'group',
      );
    }
  });
  const sources = (['useFactory', 'useClass', 'useExisting'] as const).filter((k) => options[k] !== undefined);
  if (sources.length !== 1) {
    throw new PoolConfigError(
      `PoolModule.${method}`,
      'options',
      `takes exactly one of useFactory, useClass or useExisting; got ${sources.length === 0 ? 'none' : sources.join(' and ')}`,
      'module',
    );
  }
  const declared = names(options.pools);
  const groups = names(options.groups);
  const checked = async (settings: PoolModuleSettings | Promise<PoolModuleSettings>) => {
    const resolved = await settings;
    checkSettings(resolved, declared, method, groups);
    return resolved;
  };
  const providers: Provider[] = [];
  if (options.useFactory !== undefined) {
    const factory = options.useFactory as (...deps: unknown[]) => PoolModuleSettings | Promise<PoolModuleSettings>;
    providers.push({
      provide: POOL_MODULE_SETTINGS,
      useFactory: (...deps: unknown[]) => checked(factory(...deps)),
      inject: options.inject ?? [],
    });
  } else {
    const factoryClass = (options.useClass ?? options.useExisting)!;
    if (options.useClass !== undefined) providers.push(options.useClass);
    providers.push({
      provide: POOL_MODULE_SETTINGS,
      useFactory: (factory: PoolSettingsFactory) => checked(factory.createPoolSettings()),
      inject: [factoryClass],
    });
  }
  return assemble(options, providers, method);
}

function fromOptions(options: PoolModuleOptions, method: string): DynamicModule {
  const { failOnWarmupError, shutdownGraceMs, limits } = options;
  const settings: PoolModuleSettings = {
    pools: Object.fromEntries((options.pools ?? []).map((p) => [p.name, p.options ?? {}])),
    groups: Object.fromEntries((options.groups ?? []).map((g) => [g.name, g.options])),
    failOnWarmupError,
    shutdownGraceMs,
    limits,
  };
  checkSettings(settings, names(options.pools), method, names(options.groups));
  return assemble(options, [{ provide: POOL_MODULE_SETTINGS, useValue: settings }], method);
}

function names(entries: readonly { name: string }[] | undefined): string[] {
  return (entries ?? []).map((p) => p.name);
}

function assemble(
  options: PoolModuleOptions | PoolModuleAsyncOptions,
  settings: Provider[],
  method: string,
): DynamicModule {
  const poolNames = [...names(options.pools), ...names(options.groups)];
  const poolTokens = poolNames.map((name) => getPoolToken(name));
  const providers: Provider[] = [
    ...settings,
    ...(options.pools ?? []).flatMap((p) => [connectorProvider(p), poolProvider(p.name)]),
    ...(options.groups ?? []).flatMap((g) => [memberConnectorsProvider(g), groupProvider(g.name)]),
    {
      provide: MODULE_LIMITERS,
      useFactory: (settings: PoolModuleSettings) => new ModuleLimiters(settings),
      inject: [POOL_MODULE_SETTINGS],
    },
    // Every pool factory injects this, so the names are declared before any pool is made (a
    // duplicate name opens nothing), and also when a test overrode every pool of the import.
    {
      provide: MODULE_POOLS,
      useFactory: (registry: PoolRegistry) => ModulePools.declare(poolNames, registry, method.startsWith('forFeature')),
      inject: [PoolRegistry],
    },
    PoolLifecycle,
    ...(options.extraProviders ?? []),
  ];
  if (options.httpErrors === true) providers.push({ provide: APP_FILTER, useClass: PoolErrorFilter });
  const { requestKey, requestClass } = options;
  if (requestKey !== undefined || requestClass !== undefined) {
    const where = `PoolModule.${method}`;
    const interceptor = (registry: PoolRegistry) => {
      registry.takeRequestKeys(where, requestKey !== undefined ? 'requestKey' : 'requestClass');
      return new RequestKeyInterceptor(requestKey, requestClass, where);
    };
    providers.push({ provide: APP_INTERCEPTOR, useFactory: interceptor, inject: [PoolRegistry] });
  }
  return {
    module: PoolModule,
    // Global by default, as TypeOrmModule.forRoot and BullModule.forRoot are; a feature module's pools never.
    global: !method.startsWith('forFeature') && options.isGlobal !== false,
    imports: [...(options.imports ?? []), PoolCoreModule],
    providers,
    exports: poolTokens,
  };
}

function connectorProvider({ name, connector }: AsyncPoolDefinition): Provider {
  const provide = getConnectorToken(name);
  if (typeof connector === 'function') return { provide, useClass: connector };
  if (isConnectorFactory(connector)) {
    return {
      provide,
      useFactory: connector.useFactory as (...deps: unknown[]) => unknown,
      inject: connector.inject ?? [],
    };
  }
  return { provide, useValue: connector };
}

function memberConnectorsProvider({ name, connector }: AsyncGroupDefinition): Provider {
  const provide = getConnectorToken(name);
  if (typeof connector === 'function') return { provide, useValue: connector };
  return {
    provide,
    useFactory: connector.useFactory as (...deps: unknown[]) => unknown,
    inject: connector.inject ?? [],
  };
}

function groupProvider(name: string): Provider {
  return {
    provide: getPoolToken(name),
    inject: [getConnectorToken(name), POOL_MODULE_SETTINGS, MODULE_POOLS],
    useFactory: (connector: MemberConnectors, settings: PoolModuleSettings, made: ModulePools) => {
      if (typeof connector !== 'function') {
        throw new PoolConfigError(
          name,
          'connector',
          `useFactory must return a function of the member's key that returns its connector, got ${typeof connector}`,
          'group',
        );
      }
      const group = new PoolGroup({ logger: new NestPoolLogger(name), ...settings.groups![name]!, name, connector });
      made.groups.push(group);
      return group;
    },
  };
}

function poolProvider(name: string): Provider {
  return {
    provide: getPoolToken(name),
    inject: [getConnectorToken(name), POOL_MODULE_SETTINGS, MODULE_LIMITERS, MODULE_POOLS],
    useFactory: async (
      connector: Connector<unknown>,
      settings: PoolModuleSettings,
      limiters: ModuleLimiters,
      made: ModulePools,
    ) => {
      const { limits, ...options } = settings.pools?.[name] ?? {};
      const limiter = await limiters.forPool(name, limits);
      const pool = new ConnectionPool(connector, { logger: new NestPoolLogger(name), ...options, name, limiter });
      made.pools.push(pool);
      return pool;
    },
  };
}
