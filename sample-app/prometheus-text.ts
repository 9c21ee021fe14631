// Reads what GET /metrics serves (Prometheus text format): `npm run load` and the sample's test
// use it to read the pools' metrics back.

/** One sample line: `name{label="value",...} number`. */
export interface PromSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export function parsePrometheus(text: string): PromSample[] {
  const samples: PromSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (m === null) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** The value of `name` for pool `pool` (and any other labels given), or undefined. */
export function valueOf(
  samples: readonly PromSample[],
  name: string,
  pool: string,
  labels: Record<string, string> = {},
): number | undefined {
  return samples.find(
    (s) =>
      s.name === name &&
      s.labels.db_client_connection_pool_name === pool &&
      Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  )?.value;
}

/**
 * A quantile of histogram `name` for `pool` between two scrapes, from its cumulative buckets: the
 * upper bound of the bucket the quantile falls in (what `histogram_quantile` returns, before its
 * interpolation). Undefined with no observation in between.
 */
export function bucketQuantile(
  before: readonly PromSample[],
  after: readonly PromSample[],
  name: string,
  pool: string,
  q: number,
): number | undefined {
  const buckets = after
    .filter((s) => s.name === `${name}_bucket` && s.labels.db_client_connection_pool_name === pool)
    .map((s) => ({
      le: Number(s.labels.le === '+Inf' ? Infinity : s.labels.le),
      count: s.value - (valueOf(before, `${name}_bucket`, pool, { le: s.labels.le! }) ?? 0),
    }))
    .sort((a, b) => a.le - b.le);
  const total = buckets.at(-1)?.count ?? 0;
  if (total === 0) return undefined;
  return buckets.find((b) => b.count >= q * total)!.le;
}
