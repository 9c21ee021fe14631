// `npm run load [url] [seconds] [concurrency]`: drives the running sample app with concurrent
// requests and prints what pooling did: requests served, latency, connections opened per pool,
// and each pool's wait for a connection as its OpenTelemetry metrics (GET /metrics) tell it.
import { bucketQuantile, parsePrometheus, valueOf, type PromSample } from './prometheus-text.js';
interface PoolRow {
  counters: { opened: number; acquired: number };
  admission: {
    limit: number;
    adaptive?: { algorithm: string; shared: boolean; changes: { from: number; to: number; reason: string }[] };
  } | null;
}

const url = process.argv[2] ?? process.env.SAMPLE_URL ?? 'http://127.0.0.1:3000';
const seconds = Number(process.argv[3] ?? 5);
const concurrency = Number(process.argv[4] ?? 50);

interface Tally {
  served: number;
  tooMany: number;
  unavailable: number;
  failed: number;
  latencies: number[];
}

async function scrape(): Promise<PromSample[]> {
  const res = await fetch(`${url}/metrics`);
  if (!res.ok) throw new Error(`GET ${url}/metrics answered ${res.status}`);
  return parsePrometheus(await res.text());
}

async function pools(): Promise<Record<string, PoolRow>> {
  const res = await fetch(`${url}/pools`);
  if (!res.ok) throw new Error(`GET ${url}/pools answered ${res.status}`);
  return (await res.json()) as Record<string, PoolRow>;
}

/** One request per pool in turn; users vary so the per-user limit shows. */
function requests(names: string[]): ((i: number) => [string, RequestInit])[] {
  const json = (body: unknown): RequestInit => ({
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const all: Record<string, (i: number) => [string, RequestInit]> = {
    upstream: (i) => [`/upstream/${i % 100}`, { headers: { 'x-user-id': `user-${i % 3}` } }],
    blob: (i) =>
      i % 2 === 0
        ? [`/files/load-${i % 20}.txt`, json({ content: `load ${i}` })]
        : [`/files/load-${(i + 1) % 20}.txt`, {}],
    // The pooled Redis connections serve the blocking pops; pushes go through the shared client.
    redis: (i) =>
      Math.floor(i / 4) % 2 === 0
        ? ['/jobs', { ...json({ job: `load ${i}` }), method: 'POST' }]
        : ['/jobs/next?waitMs=50', {}],
    pg: (i) => (i % 4 === 0 ? ['/notes', { ...json({ text: `load ${i}` }), method: 'POST' }] : ['/notes', {}]),
    // The pool group: twelve tenants, a few of them busier, sharing one budget of sessions.
    tenants: (i) => {
      const n = Math.floor(i / 3); // i itself has the same remainder on every call of this kind
      return [`/tenants/tenant-${n % 7 === 0 ? n % 12 : n % 3}/items/${i % 100}`, {}];
    },
  };
  return names.filter((n) => n in all).map((n) => all[n]);
}

async function main(): Promise<void> {
  const before = await pools();
  const metricsBefore = await scrape();
  const names = [...Object.keys(before), 'tenants'];
  const kinds = requests(names);
  const tally = new Map<string, Tally>(
    kinds.map((_, k) => [names[k], { served: 0, tooMany: 0, unavailable: 0, failed: 0, latencies: [] }]),
  );
  const end = Date.now() + seconds * 1_000;
  let n = 0;
  const worker = async () => {
    while (Date.now() < end) {
      const i = n++;
      const kind = i % kinds.length;
      const [path, init] = kinds[kind](i);
      const t = tally.get(names[kind])!;
      const start = performance.now();
      try {
        const res = await fetch(`${url}${path}`, init);
        await res.arrayBuffer();
        if (res.status === 429) t.tooMany++;
        else if (res.status === 503) t.unavailable++;
        else if (res.status >= 400 && !(res.status === 404 && path.startsWith('/files/'))) t.failed++;
        else {
          t.served++;
          t.latencies.push(performance.now() - start);
        }
      } catch {
        t.failed++;
      }
    }
  };
  console.log(`${concurrency} concurrent clients for ${seconds} s against ${url} ...`);
  console.log(`watch it live: ${url}/pools/ui`);
  await Promise.all(Array.from({ length: concurrency }, worker));
  const after = await pools();
  const metricsAfter = await scrape();

  const pct = (xs: number[], q: number) =>
    xs.length === 0 ? 0 : xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
  const rows = [['pool', 'served', 'p50 ms', 'p99 ms', '429', '503', 'errors', 'connections opened', 'leases']];
  for (const name of names) {
    const t = tally.get(name);
    if (t === undefined) continue;
    // A group is not in GET /pools: its members come and go (see the dashboard).
    const opened = after[name] === undefined ? '-' : String(after[name].counters.opened - before[name].counters.opened);
    const leases =
      after[name] === undefined ? '-' : String(after[name].counters.acquired - before[name].counters.acquired);
    rows.push([
      name,
      String(t.served),
      pct(t.latencies, 0.5).toFixed(1),
      pct(t.latencies, 0.99).toFixed(1),
      String(t.tooMany),
      String(t.unavailable),
      String(t.failed),
      opened,
      leases,
    ]);
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  for (const r of rows) console.log(r.map((cell, c) => cell.padStart(widths[c])).join('  '));
  console.log('\nconnections opened: new connections during the run; leases: checkouts they served.');

  // The same run as the pools' metrics saw it, read from GET /metrics (bucket upper bounds).
  const ms = (s: number | undefined) =>
    s === undefined
      ? '-'
      : s === Infinity
        ? '> 10 s'
        : s < 0.001
          ? `≤ ${(s * 1000).toFixed(1)}`
          : `≤ ${(s * 1000).toFixed(0)}`;
  const waits = [['pool', 'acquires', 'wait p50 ms', 'wait p99 ms', 'hold p50 ms', 'hold p99 ms', 'timeouts']];
  for (const name of names.filter((n) => before[n] !== undefined)) {
    const count =
      (valueOf(metricsAfter, 'db_client_connection_wait_time_count', name) ?? 0) -
      (valueOf(metricsBefore, 'db_client_connection_wait_time_count', name) ?? 0);
    const timeouts =
      (valueOf(metricsAfter, 'db_client_connection_timeouts_total', name) ?? 0) -
      (valueOf(metricsBefore, 'db_client_connection_timeouts_total', name) ?? 0);
    const q = (metric: string, p: number) => ms(bucketQuantile(metricsBefore, metricsAfter, metric, name, p));
    waits.push([
      name,
      String(count),
      q('db_client_connection_wait_time', 0.5),
      q('db_client_connection_wait_time', 0.99),
      q('db_client_connection_use_time', 0.5),
      q('db_client_connection_use_time', 0.99),
      String(timeouts),
    ]);
  }
  const w = waits[0].map((_, c) => Math.max(...waits.map((r) => r[c].length)));
  console.log('\nfrom GET /metrics (OpenTelemetry, Prometheus format):');
  for (const r of waits) console.log(r.map((cell, c) => cell.padStart(w[c])).join('  '));
  // The upstream pool's adaptive limit: where it started, where it settled, its last moves.
  const adaptive = after.upstream?.admission?.adaptive;
  if (adaptive !== undefined) {
    const moves = adaptive.changes
      .slice(-8)
      .map((c) => `${c.from}→${c.to}`)
      .join(' ');
    console.log(
      `\nthe upstream's adaptive limit (${adaptive.algorithm}${adaptive.shared ? ', one for every instance through Redis' : ''}): ${before.upstream.admission!.limit} before, ${after.upstream.admission!.limit} now; last moves ${moves || 'none'}`,
    );
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
