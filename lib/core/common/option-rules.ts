// The one way options are checked, in every layer: pool options, per-call options, limiter and
// Redis options, the Nest module's options and the decorator's. A rule says in words what a value
// must be and tests it; a bad value becomes a PoolConfigError that names its subject (the pool, the
// limiter, the module method, the decorator), the field, the rule and the value given.
import { scrub } from './scrub.js';
import { PoolConfigError, type ConfigSubject } from './errors.js';

/** What an option may be: the words for an error ("a whole number of 1 or more") and the test. */
export interface Rule {
  readonly says: string;
  ok(value: unknown): boolean;
}

const isNumber = (v: unknown): v is number => typeof v === 'number' && !Number.isNaN(v);

/** The rules options use. Numbers never accept NaN; only the `finite` ones refuse Infinity. */
export const is = {
  /** An integer of `min` or more, and a safe one (never Infinity, never 1e308). */
  whole: (min: number): Rule => ({
    says: `a whole number of ${min} or more`,
    ok: (v) => Number.isSafeInteger(v) && (v as number) >= min,
  }),
  /** An integer from `min` to `max`. */
  count: (min: number, max: number, why: string): Rule => ({
    says: `a whole number from ${min} to ${max.toLocaleString('en-US')} (${why})`,
    ok: (v) => Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max,
  }),
  /** A number of `min` or more, Infinity included. */
  atLeast: (min: number): Rule => ({ says: `a number of ${min} or more`, ok: (v) => isNumber(v) && v >= min }),
  /** A number above `min`, Infinity included. */
  above: (min: number): Rule => ({ says: `a number above ${min}`, ok: (v) => isNumber(v) && v > min }),
  /** A finite number of `min` or more. */
  finiteAtLeast: (min: number): Rule => ({
    says: `a finite number of ${min} or more`,
    ok: (v) => Number.isFinite(v) && (v as number) >= min,
  }),
  /** A finite number above `min`. */
  finiteAbove: (min: number): Rule => ({
    says: `a finite number above ${min}`,
    ok: (v) => Number.isFinite(v) && (v as number) > min,
  }),
  /** A number from `min` up to, not including, `end`. */
  from: (min: number, end: number): Rule => ({
    says: `a number from ${min} to below ${end}`,
    ok: (v) => isNumber(v) && v >= min && v < end,
  }),
  fraction: { says: 'a fraction in (0, 1]', ok: (v) => isNumber(v) && v > 0 && v <= 1 } as Rule,
  boolean: { says: 'true or false', ok: (v) => typeof v === 'boolean' } as Rule,
  text: { says: 'a non-empty string', ok: (v) => typeof v === 'string' && v.length > 0 } as Rule,
  function: { says: 'a function', ok: (v) => typeof v === 'function' } as Rule,
  object: { says: 'an object', ok: (v) => typeof v === 'object' && v !== null } as Rule,
  /** One of the given strings. */
  oneOf: (...values: readonly string[]): Rule => ({
    says: values.map((v) => `'${v}'`).join(' or '),
    ok: (v) => values.includes(v as string),
  }),
  /** `rule`, with a note on what a value means ("Infinity: wait for every lease"). */
  noted: (rule: Rule, note: string): Rule => ({ says: `${rule.says} (${note})`, ok: (v) => rule.ok(v) }),
};

/** How a value reads in an error: numbers as written, strings quoted, other values by their type. */
export function shown(value: unknown): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return value === '' ? 'an empty string' : JSON.stringify(scrub(value));
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value;
}

/** Where a field's errors go: its subject, the subject's name, and a prefix for nested fields. */
export interface OptionScope {
  readonly subject: ConfigSubject;
  /** The pool's or limiter's name, or the module method or decorator (`PoolModule.forRoot`). */
  readonly name: string;
  /** Put before each field: `limits.redis.` for the Redis options of a limiter. */
  readonly path?: string;
}

/** The error for a field whose problem is said in full ("must not exceed maxSize (4)"). */
export function optionError(scope: OptionScope, field: string, problem: string): PoolConfigError {
  return new PoolConfigError(scope.name, `${scope.path ?? ''}${field}`, problem, scope.subject);
}

/**
 * The keys of an options type, listed once as `{ key: true }`: the compiler checks the list has
 * every key of `O` and no other, so a new option cannot be forgotten by the unknown-key check.
 */
export function keysOf<O>(keys: Record<keyof O & string, true>): readonly string[] {
  return Object.keys(keys);
}

/**
 * The error for the first key of `options` that `known` does not list, or undefined: a misspelled
 * or misplaced option (`maxsize`, in JavaScript or through `as any`) would otherwise be ignored.
 * `about` says whose options they are ("a pool's options").
 */
export function unknownKey(
  scope: OptionScope,
  options: object,
  known: readonly string[],
  about: string,
): PoolConfigError | undefined {
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    const near = closest(key, known);
    const hint = near === undefined ? '' : `did you mean "${scope.path ?? ''}${near}"? `;
    return optionError(scope, key, `is not one of ${about}: ${hint}they are ${known.join(', ')}`);
  }
  return undefined;
}

/** The error for `value` of `field` breaking `rule`, or undefined when it keeps it (an absent value keeps any rule). */
export function violation(scope: OptionScope, field: string, value: unknown, rule: Rule): PoolConfigError | undefined {
  if (value === undefined || rule.ok(value)) return undefined;
  return optionError(scope, field, `must be ${rule.says}, got ${shown(value)}`);
}

/**
 * Reads one options object: each field is checked against its rule and defaulted when absent;
 * the first bad field throws a {@link PoolConfigError}.
 */
export class OptionReader<O extends object> {
  constructor(
    readonly scope: OptionScope,
    readonly options: O,
  ) {}

  /** Refuses any key of the options that `known` does not list (see {@link unknownKey}). */
  only(known: readonly string[], about: string): this {
    const unknown = unknownKey(this.scope, this.options, known, about);
    if (unknown !== undefined) throw unknown;
    return this;
  }

  /** The field's value, checked against `rule`, or `fallback` when it is absent. */
  get<K extends keyof O & string, V extends Exclude<O[K], undefined>>(field: K, rule: Rule, fallback: V): V;
  get<K extends keyof O & string>(field: K, rule: Rule): O[K] | undefined;
  get<K extends keyof O & string>(field: K, rule: Rule, fallback?: O[K]): O[K] | undefined {
    const value = this.options[field];
    const invalid = violation(this.scope, field, value, rule);
    if (invalid !== undefined) throw invalid;
    return value ?? fallback;
  }

  /** A reader of the object at `field` (an empty one when absent), its errors prefixed with the field. */
  nested<K extends keyof O & string>(field: K): OptionReader<Exclude<O[K], undefined> & object> {
    const value = this.get(field, is.object) ?? {};
    return new OptionReader(
      { ...this.scope, path: `${this.scope.path ?? ''}${field}.` },
      value as Exclude<O[K], undefined> & object,
    );
  }

  /** Throws the error for a field whose problem is said in full. */
  fail(field: string, problem: string): never {
    throw optionError(this.scope, field, problem);
  }
}

// "Did you mean `maxSize`?": the closest of the names a user could have meant, for errors about
// a misspelled option key or pool name.

/** Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`, ignoring case. */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  // Three rows of the optimal string alignment table are enough.
  let before = new Array<number>(t.length + 1).fill(0);
  let previous = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const row = [i];
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let best = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) best = Math.min(best, before[j - 2]! + 1);
      row.push(best);
    }
    before = previous;
    previous = row;
  }
  return previous[t.length]!;
}

/**
 * The candidate `name` most likely misspells: the nearest by edits, if it is near enough (a third
 * of the name's length, at least one edit; any case difference alone), else undefined. A name of
 * four letters or more that begins a candidate (`failOnWarmup` for `failOnWarmupError`) is one edit away.
 */
export function closest(name: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const shortened = name.length >= 4 && candidate.toLowerCase().startsWith(name.toLowerCase());
    const distance = shortened ? 1 : editDistance(name, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return bestDistance <= Math.max(1, Math.floor(name.length / 3)) ? best : undefined;
}
