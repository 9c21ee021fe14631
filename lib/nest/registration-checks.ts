import {
  is,
  keysOf,
  optionError,
  type OptionScope,
  PoolConfigError,
  resolveOptions,
  type Rule,
  shown,
  unknownKey,
  violation,
} from '../core/index.js';
import { resolveGroupOptions } from '../groups/index.js';
import { makeLimiter, type LimitsConfig } from './module-limiters.js';
import type {
  ConnectorFactory,
  ConnectorSource,
  GroupedOptions,
  PoolDefinition,
  PoolFeatureSettings,
  PoolModuleAsyncOptions,
  PoolModuleOptions,
  PoolModuleSettings,
  StaticSettings,
} from './pool-module-options.js';

// The checks of a registration (forRoot, forRootAsync, forFeature and their settings), made when
// it is read: a wrong option fails the app's boot with the field, the value and the fix.

const STATIC_KEYS = keysOf<StaticSettings>({
  isGlobal: true,
  httpErrors: true,
  imports: true,
  requestKey: true,
  requestClass: true,
  extraProviders: true,
});
const SETTINGS_KEYS = keysOf<PoolModuleSettings>({
  pools: true,
  groups: true,
  limits: true,
  failOnWarmupError: true,
  shutdownGraceMs: true,
});
const ASYNC_KEYS = keysOf<PoolModuleAsyncOptions>({
  isGlobal: true,
  httpErrors: true,
  imports: true,
  requestKey: true,
  requestClass: true,
  extraProviders: true,
  pools: true,
  groups: true,
  useFactory: true,
  inject: true,
  useClass: true,
  useExisting: true,
});
/** The keys each method takes; forFeature's settings are checked as given, before its pools join them. */
const METHOD_KEYS: Readonly<Record<string, readonly string[]>> = {
  forRoot: [...STATIC_KEYS, ...SETTINGS_KEYS],
  forRootAsync: ASYNC_KEYS,
  forFeatureAsync: ASYNC_KEYS.filter((k) => k !== 'isGlobal' && k !== 'requestKey' && k !== 'requestClass'),
  forFeature: keysOf<PoolFeatureSettings>({
    httpErrors: true,
    imports: true,
    extraProviders: true,
    limits: true,
    failOnWarmupError: true,
    shutdownGraceMs: true,
    groups: true,
  }),
};
const DEFINITION_KEYS = keysOf<PoolDefinition>({ name: true, connector: true, options: true });
/** What a factory's settings may not say, and where it goes instead. */
const notFromFactory = (method: string) =>
  `shapes the module, so it cannot come from the factory: give it to ${method} itself, beside pools and useFactory`;

/** Where the errors of `PoolModule.<method>`'s own options go. */
const moduleScope = (method: string): OptionScope => ({ subject: 'module', name: `PoolModule.${method}` });

/** A module error of `PoolModule.<method>`. */
function moduleError(method: string, field: string, problem: string): PoolConfigError {
  return optionError(moduleScope(method), field, problem);
}

/** Throws if `value` of the module's `field` breaks `rule`. */
function check(method: string, field: string, value: unknown, rule: Rule): void {
  const invalid = violation(moduleScope(method), field, value, rule);
  if (invalid !== undefined) throw invalid;
}

/** Checks the static part of a registration; throws {@link PoolConfigError} naming the field. */
export function checkRegistration(options: PoolModuleOptions | PoolModuleAsyncOptions, method: string): void {
  if (typeof options !== 'object' || options === null) {
    throw moduleError(method, 'options', 'must be an object: { pools: [{ name, connector }] }');
  }
  // forFeature's settings are checked as given (checkFeatureSettings), before its pools join them.
  const unknown =
    method === 'forFeature'
      ? undefined
      : unknownKey(moduleScope(method), options, METHOD_KEYS[method]!, `the options of PoolModule.${method}`);
  if (unknown !== undefined) throw unknown;
  for (const list of ['pools', 'groups', 'extraProviders'] as const) {
    if (options[list] !== undefined && !Array.isArray(options[list]))
      throw moduleError(method, list, `must be an array, got ${shown(options[list])}`);
  }
  const pools = options.pools ?? [];
  const groups = options.groups ?? [];
  if (pools.length + groups.length === 0 && method.endsWith('Async')) {
    // The TypeORM / BullMQ way: everything from the factory. Here the names and connectors are static.
    throw moduleError(
      method,
      'pools',
      `must list the pools here, by name and connector; only their options come from the factory: PoolModule.${method}({ pools: [{ name: 'db', connector: PgConnector }], useFactory: (config: ConfigService) => ({ pools: { db: { maxSize: config.get('DB_POOL_SIZE') } } }), inject: [ConfigService] }) (groups alike: groups: [{ name, connector }])`,
    );
  }
  if (pools.length + groups.length === 0) {
    throw moduleError(
      method,
      'pools',
      'must list at least one pool ([{ name, connector }]), or groups one group ([{ name, connector: (key) => connector, options: { maxTotal } }])',
    );
  }
  const seen = new Set<string>();
  const named = (entry: { name?: unknown } | undefined, field: string): string => {
    const name: unknown = entry?.name;
    if (typeof name !== 'string' || name.length === 0)
      throw moduleError(method, `${field}.name`, `must be ${is.text.says}, got ${shown(name)}`);
    if (name === 'status') throw new PoolConfigError(name, 'name', 'is reserved by health checks; pick another name');
    if (seen.has(name))
      throw new PoolConfigError(
        name,
        'name',
        `is listed twice in ${method} (pools and groups share one namespace); give each its own name`,
      );
    seen.add(name);
    return name;
  };
  const entry = (list: 'pools' | 'groups', i: number, value: unknown) => {
    if (typeof value !== 'object' || value === null) return; // named() says what an entry must be
    const bad = unknownKey(
      { ...moduleScope(method), path: `${list}[${i}].` },
      value,
      DEFINITION_KEYS,
      `the keys of a ${list === 'pools' ? 'pool' : 'group'} entry`,
    );
    if (bad !== undefined) throw bad;
  };
  pools.forEach((pool, i) => {
    entry('pools', i, pool);
    checkConnectorSource(named(pool, `pools[${i}]`), pool.connector);
  });
  groups.forEach((group, i) => {
    entry('groups', i, group);
    checkGroupConnectors(named(group, `groups[${i}]`), group.connector);
  });
  for (const flag of ['isGlobal', 'httpErrors'] as const) check(method, flag, options[flag], is.boolean);
  check(method, 'requestKey', options.requestKey, is.function);
  check(method, 'requestClass', options.requestClass, is.function);
}

/** Checks the settings of `PoolModule.forFeature(pools, settings)` as given. */
export function checkFeatureSettings(settings: PoolFeatureSettings): void {
  const unknown = unknownKey(
    moduleScope('forFeature'),
    settings,
    METHOD_KEYS.forFeature!,
    'the settings of PoolModule.forFeature (its second argument)',
  );
  if (unknown !== undefined) throw unknown;
}

/** Checks the settings, after the async factory if there is one. */
export function checkSettings(
  settings: PoolModuleSettings,
  names: readonly string[],
  method: string,
  groupNames: readonly string[] = [],
): void {
  if (typeof settings !== 'object' || settings === null)
    throw moduleError(method, 'settings', `must be an object, got ${shown(settings)}`);
  for (const key of STATIC_KEYS) if (key in settings) throw moduleError(method, key, notFromFactory(method));
  const unknown = unknownKey(
    moduleScope(method),
    settings,
    SETTINGS_KEYS,
    method.endsWith('Async') ? `the settings a ${method} factory returns` : `the options of PoolModule.${method}`,
  );
  if (unknown !== undefined) throw unknown;
  check(method, 'failOnWarmupError', settings.failOnWarmupError, is.boolean);
  check(method, 'shutdownGraceMs', settings.shutdownGraceMs, is.noted(is.atLeast(0), 'Infinity: wait for every lease'));
  const pools: unknown = settings.pools ?? {};
  if (Array.isArray(pools)) {
    throw moduleError(
      method,
      'pools',
      `is a list, as forRoot takes it; a factory returns options by pool name ({ pools: { db: { maxSize: 20 } } }), and the pools themselves go in ${method}({ pools: [{ name: 'db', connector }] })`,
    );
  }
  if (typeof pools !== 'object' || pools === null) {
    throw moduleError(method, 'pools', 'must map pool names to their options: { db: { maxSize: 20 } }');
  }
  for (const [name, options] of Object.entries(pools)) {
    const invalid = violation({ subject: 'pool', name }, 'options', options ?? null, is.object);
    if (invalid !== undefined) throw invalid;
    if (!names.includes(name)) {
      throw new PoolConfigError(
        name,
        'pools',
        `has options but is not declared in ${method}({ pools }); declared: ${names.join(', ')}`,
      );
    }
  }
  // The pools would reject these at construction; checking here fails before any pool is made.
  for (const name of names) {
    const { limits, ...options } = settings.pools?.[name] ?? {};
    const set = {
      name: "comes from the pool's entry ({ name, connector, options })",
      limiter: 'is made by the module: give limits ({ global, perKey, redis }, or a limiter you made) instead',
    } as const;
    for (const key of ['name', 'limiter'] as const) if (key in options) throw new PoolConfigError(name, key, set[key]);
    resolveOptions({ ...options, name });
    if (limits !== undefined) checkLimits(limits, method, `pools.${name}.limits`, `${name}:limits`);
  }
  if (settings.limits !== undefined) checkLimits(settings.limits, method, 'limits', 'limits');
  checkGroupSettings(settings.groups, groupNames, method);
}

function checkGroupSettings(groups: unknown, names: readonly string[], method: string): void {
  groups ??= {};
  if (typeof groups !== 'object' || groups === null) {
    throw moduleError(method, 'groups', 'must map group names to their options: { tenants: { maxTotal: 20 } }');
  }
  for (const name of Object.keys(groups)) {
    if (!names.includes(name)) {
      throw new PoolConfigError(
        name,
        'groups',
        `has options but is not declared in ${method}({ groups }); declared: ${names.join(', ') || 'none'}`,
        'group',
      );
    }
  }
  // The group would reject these at construction (maxTotal is required); checking here fails before any is made.
  for (const name of names) {
    const options: unknown = (groups as Record<string, unknown>)[name];
    const invalid = violation({ subject: 'group', name }, 'options', options ?? null, is.object);
    if (invalid !== undefined) throw invalid;
    resolveGroupOptions({
      ...(options as GroupedOptions),
      name,
      connector: () => ({ create: () => Promise.reject(new Error('not made')) }),
    });
  }
}

/** `limiter`: the name the limiter will have (the pool's own: `<pool>:limits`), which its errors name. */
function checkLimits(limits: unknown, method: string, field: string, limiter: string): void {
  if (typeof limits !== 'object' || limits === null) {
    throw moduleError(
      method,
      field,
      'must be { global?, perKey?, wait?, redis?, adaptive? } or a limiter (LocalLimiter, RedisLimiter, AdaptiveLimiter)',
    );
  }
  makeLimiter(limits as LimitsConfig, limiter); // constructing checks every field; nothing connects yet
}

/** Whether a source is a factory (otherwise a class or an instance). */
export function isConnectorFactory<T>(source: ConnectorSource<T>): source is ConnectorFactory<T> {
  return typeof source === 'object' && source !== null && 'useFactory' in source;
}

function checkGroupConnectors(name: string, source: unknown): void {
  if (typeof source === 'function') return;
  if (typeof source === 'object' && source !== null && 'useFactory' in source) {
    const invalid = violation(
      { subject: 'group', name },
      'connector.useFactory',
      source.useFactory ?? null,
      is.function,
    );
    if (invalid === undefined) return;
    throw invalid;
  }
  throw new PoolConfigError(
    name,
    'connector',
    "must be a function of the member's key that returns its connector, or { useFactory, inject } returning one",
    'group',
  );
}

function checkConnectorSource(name: string, source: unknown): void {
  if (typeof source === 'function') return; // a class: Nest makes it, then the pool checks it
  if (typeof source === 'object' && source !== null) {
    if ('useFactory' in source) {
      const invalid = violation(
        { subject: 'pool', name },
        'connector.useFactory',
        source.useFactory ?? null,
        is.function,
      );
      if (invalid !== undefined) throw invalid;
      return;
    }
    if (typeof (source as { create?: unknown }).create === 'function') return;
  }
  throw new PoolConfigError(
    name,
    'connector',
    'must be a connector class, an object with a create() method, or { useFactory, inject }',
  );
}
