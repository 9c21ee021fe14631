import {
  type Admission,
  type AdmissionRequest,
  CapacityExceededError,
  type ClassStats,
  closest,
  KeyLimitError,
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
      `shares add up to 1, so the class ${shown(unshared)}, whose share is 0, would never be served under contention: give it a share, or lower the others`,
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

/**
 * What a limiter counts of its calls' ends: its refusals (once per call, when it is refused at
 * once or at its deadline, not per attempt) and, with priority classes, by class the slots held in
 * this process and the calls admitted and refused.
 */
export class ClassTally {
  /** Slots each class holds here; empty without classes (so is every other count). */
  readonly held: number[];
  readonly #admitted: number[];
  readonly #refused: number[];

  constructor(
    readonly classes: ResolvedClasses,
    readonly counters: { refusedGlobal: number; refusedKey: number },
  ) {
    this.held = classes.names.map(() => 0);
    this.#admitted = classes.names.map(() => 0);
    this.#refused = classes.names.map(() => 0);
  }

  /** Whether the limiter has classes. */
  get active(): boolean {
    return this.held.length > 0;
  }

  /** A slot taken for `cls`; `claimed`: it reached its caller at once (else see {@link claimed}). */
  took(cls: number, claimed = true): void {
    if (!this.active) return;
    this.held[cls]!++;
    if (claimed) this.#admitted[cls]!++;
  }

  /** An admission of `cls` taken unclaimed reached its caller (a Redis limiter counts each so: see RedisWaiting). */
  claimed(cls: number): void {
    if (this.active) this.#admitted[cls]!++;
  }

  gave(cls: number): void {
    if (this.active) this.held[cls]!--;
  }

  /** A call of `cls` refused at once with `err` (another error, such as an abort, is no refusal). */
  refused(cls: number, err: unknown): void {
    if (this.counted(err) && this.active) this.#refused[cls]!++;
  }

  /** Counts `err` in the limiter's counters if it is a refusal (a waiter's at its deadline: see {@link counting}); whether it is. */
  counted(err: unknown): boolean {
    if (err instanceof KeyLimitError) this.counters.refusedKey++;
    else if (err instanceof CapacityExceededError) this.counters.refusedGlobal++;
    else return false;
    return true;
  }

  /** Whether `cls` holds less here than its share of `global`, rounded down: its guarantee. */
  underShare(cls: number, global: number): boolean {
    return this.held[cls]! < Math.floor(this.classes.shares[cls]! * global);
  }

  /**
   * A wait that ends in a refusal counts against its class: one more promise, with classes only
   * (the limiter's counters count it where the refusal is made, at no cost to the wait).
   */
  counting(waited: Promise<Admission>, cls: number): Promise<Admission> {
    if (!this.active) return waited;
    return waited.catch((err: unknown) => {
      if (err instanceof CapacityExceededError || err instanceof KeyLimitError) this.#refused[cls]!++;
      throw err;
    });
  }

  /** `classes` of a limiter's stats (present with classes only); `waiting`: callers waiting, by class. */
  report(waiting: readonly number[]): { classes?: ClassStats[] } {
    const { names, shares } = this.classes;
    if (names.length === 0) return {};
    return {
      classes: names.map((name, i) => ({
        name,
        share: shares[i]!,
        used: this.held[i]!,
        waiting: waiting[i] ?? 0,
        admitted: this.#admitted[i]!,
        refused: this.#refused[i]!,
      })),
    };
  }
}

/** As {@link classOf}, the error returned rather than thrown; undefined when the limiter has no classes. */
export function classOrError(
  request: AdmissionRequest,
  limits: { readonly classes: ResolvedClasses; readonly name: string },
): number | undefined | PoolConfigError {
  if (limits.classes.names.length === 0) return undefined;
  try {
    return classOf(request, limits.classes, limits.name);
  } catch (err) {
    return err as PoolConfigError;
  }
}
