import {
  type AdmissionRequest,
  closest,
  is,
  type OptionReader,
  PoolConfigError,
  shown,
  violation,
} from '../../core/index.js';

/** One class of callers of a partitioned limit. */
export interface PriorityClass {
  /** What calls name it by (`{ class: 'live' }`, `@UsePooled(..., { class })`). */
  name: string;
  /**
   * The fraction of the global limit it is guaranteed under contention (0 to 1; the shares add
   * up to 1 at most). A class under its share gets the next slot freed before any class over
   * its own; a class may use more while others leave slots idle. Default 0: no guarantee.
   */
  share?: number;
}

/** Priority classes after defaults: empty when the limits have none. */
export interface ResolvedClasses {
  readonly names: readonly string[];
  /** Each class's share, in the order of `names` (highest priority first). */
  readonly shares: readonly number[];
  /** The class of a call that names none. */
  readonly defaultClass: number;
  /** How much longer a waiter of the next class down may wait before it goes ahead of a newer one of the class above. */
  readonly agingMs: number;
}

/** The aging default: a class-r waiter overtakes a higher class's newer waiters once it has waited r seconds longer. */
const AGING_MS = 1_000;

const NO_CLASSES: ResolvedClasses = { names: [], shares: [], defaultClass: 0, agingMs: AGING_MS };

/** `classes`, `defaultClass` and `agingMs` of a limiter's options, checked. */
export function resolveClasses(read: OptionReader<object>): ResolvedClasses {
  const options = read.options as Record<string, unknown>;
  const given = options.classes;
  if (given === undefined) {
    for (const field of ['defaultClass', 'agingMs'])
      if (options[field] !== undefined) read.fail(field, 'needs classes: give limits.classes, or leave it out');
    return NO_CLASSES;
  }
  if (!Array.isArray(given) || given.length === 0)
    read.fail(
      'classes',
      `must be a non-empty array of { name, share? }, highest priority first, got ${Array.isArray(given) ? 'an empty array' : shown(given)}`,
    );
  const names: string[] = [];
  const shares: number[] = [];
  (given as unknown[]).forEach((c, i) => {
    const field = `classes[${i}]`;
    if (typeof c !== 'object' || c === null) read.fail(field, `must be { name, share? }, got ${shown(c)}`);
    const { name, share = 0, ...rest } = c as PriorityClass;
    const extra = Object.keys(rest)[0];
    if (extra !== undefined) read.fail(`${field}.${extra}`, 'is not an option of a class: give { name, share? }');
    if (!is.text.ok(name)) read.fail(`${field}.name`, `must be a non-empty string, got ${shown(name)}`);
    if (names.includes(name)) read.fail(`${field}.name`, `(${shown(name)}) names another class too: give each its own`);
    if (!(typeof share === 'number' && share >= 0 && share <= 1))
      read.fail(`${field}.share`, `must be a number from 0 to 1 (a fraction of the global limit), got ${shown(share)}`);
    names.push(name);
    shares.push(share);
  });
  const total = shares.reduce((a, b) => a + b, 0);
  if (total > 1 + 1e-9) read.fail('classes', `shares add up to ${total}: they must add up to 1 at most`);
  // Aging orders the slots no share guarantees: with every slot guaranteed, a class without a share would never be served.
  const unshared = names.find((_, i) => shares[i] === 0);
  if (total > 1 - 1e-9 && unshared !== undefined)
    read.fail(
      'classes',
      `shares add up to 1, so the class ${shown(unshared)}, which has none, would never be served under contention: give it a share, or lower the others`,
    );
  const defaultName = options.defaultClass ?? names[names.length - 1];
  const defaultClass = names.indexOf(defaultName as string);
  if (defaultClass < 0) read.fail('defaultClass', unknownClass(defaultName, names, read.scope.name));
  const aging = violation(read.scope, 'agingMs', options.agingMs, is.finiteAtLeast(0));
  if (aging !== undefined) throw aging;
  return { names, shares, defaultClass, agingMs: (options.agingMs as number | undefined) ?? AGING_MS };
}

function unknownClass(name: unknown, names: readonly string[], limiter: string): string {
  const near = typeof name === 'string' ? closest(name, names) : undefined;
  return `(${shown(name)}) is not a class of the limiter "${limiter}": one of ${names.map((n) => `'${n}'`).join(', ')}${
    near === undefined ? '' : ` (did you mean '${near}'?)`
  }`;
}

/**
 * The index of the class a call asks for (the default when it names none). Throws a
 * {@link PoolConfigError} for a class the limiter does not have. A limiter without classes takes
 * every call as one class (0), whatever it names.
 */
export function classOf(request: AdmissionRequest, classes: ResolvedClasses, limiter: string): number {
  const asked = request.class;
  if (asked === undefined || classes.names.length === 0) return classes.defaultClass;
  const index = classes.names.indexOf(asked);
  if (index >= 0) return index;
  throw new PoolConfigError(request.pool, 'acquire.class', unknownClass(asked, classes.names, limiter));
}
