import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startSample, type RunningSample } from '../../sample-app/main.js';
import { parsePrometheus, valueOf } from '../../sample-app/prometheus-text.js';
import { REDIS_URL } from '../support/redis.js';

// The sample app on real services: Azurite (embedded), the HTTP/2 upstream (embedded, with a short
// idle timeout), the machine's Redis and PostgreSQL.
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sockets and servers open in this process. */
const netHandles = () => process.getActiveResourcesInfo().filter((r) => /TCP|Pipe|Server/i.test(r)).length;

describe('the sample app on real services', () => {
  let sample: RunningSample;
  let handlesBefore: number;
  const call = async (path: string, init?: RequestInit) => {
    const res = await fetch(`${sample.url}${path}`, init);
    return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
  };
  const json = (method: string, body: unknown): RequestInit => ({
    method,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

  beforeAll(async () => {
    handlesBefore = netHandles();
    sample = await startSample({
      port: 0,
      logger: false,
      env: { REDIS_URL, DATABASE_URL, PER_USER_LIMIT: '3', JOBS_KEY: `sample:jobs:test-${process.pid}-${Date.now()}` },
      upstream: { idleTimeoutMs: 400, handshakeDelayMs: 30 },
    });
    // A namespace the limiter never used starts with one TTL of quarantine.
    for (let i = 0; i < 100; i++) {
      const pools = (await call('/pools')).body as { upstream: { admission: { mode: string } } };
      if (pools.upstream.admission.mode === 'redis') break;
      await sleep(100);
    }
  }, 30_000);

  afterAll(async () => {
    await sample?.close();
  });

  it('stores and reads files in blob storage', async () => {
    expect(await call('/files/hello.txt', json('PUT', { content: 'hi there' }))).toMatchObject({
      status: 200,
      body: { name: 'hello.txt', bytes: 8 },
    });
    expect(await call('/files/hello.txt')).toMatchObject({
      status: 200,
      body: { name: 'hello.txt', content: 'hi there' },
    });
    expect((await call('/files')).body.files).toContain('hello.txt');
    expect(await call('/files/missing.txt')).toMatchObject({ status: 404 });
    expect(await call('/files/bad.txt', json('PUT', { content: 7 }))).toMatchObject({
      status: 400,
      body: { message: 'send JSON: { "content": "some text" }' },
    });
  });

  it('reads a file whole while another request rewrites it with another length', async () => {
    // downloadToBuffer() asked the size, then the bytes: a PUT in between made it fail (a 500).
    await call('/files/racing.txt', json('PUT', { content: 'x' }));
    const reads: Awaited<ReturnType<typeof call>>[] = [];
    for (let round = 0; round < 20; round++) {
      const [, read] = await Promise.all([
        call('/files/racing.txt', json('PUT', { content: 'x'.repeat(1 + (round % 2) * 40) })),
        call('/files/racing.txt'),
      ]);
      reads.push(read);
    }
    for (const read of reads) {
      expect(read.status).toBe(200);
      expect(['x', 'x'.repeat(41)]).toContain(read.body.content);
    }
  });

  it('proxies over pooled HTTP/2 sessions, limited per user', async () => {
    expect(await call('/upstream/42', { headers: { 'x-user-id': 'ann' } })).toMatchObject({
      status: 200,
      body: { status: 200, upstream: { path: '/items/42' } },
    });
    const burst = await Promise.all(
      Array.from({ length: 20 }, (_, i) => fetch(`${sample.url}/upstream/${i}`, { headers: { 'x-user-id': 'bob' } })),
    );
    const statuses = burst.map((r) => r.status);
    expect(statuses).toContain(200);
    expect(statuses).toContain(429);
    const refused = burst.find((r) => r.status === 429)!;
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({ code: 'KEY_LIMIT', pool: 'upstream' });
    await Promise.all(burst.map((r) => r.arrayBuffer().catch(() => undefined)));
  });

  it('keeps serving after the upstream drops idle sessions: they are retired and reopened', async () => {
    await call('/upstream/before', { headers: { 'x-user-id': 'cy' } });
    const before = ((await call('/pools')).body.upstream as { counters: { retired: number; opened: number } }).counters;
    await sleep(700); // past the upstream's idle timeout: it sends GOAWAY and closes
    expect(await call('/upstream/after', { headers: { 'x-user-id': 'cy' } })).toMatchObject({ status: 200 });
    const after = (
      (await call('/pools')).body.upstream as { counters: { retired: number; opened: number; createFailures: number } }
    ).counters;
    expect(after.retired).toBeGreaterThan(before.retired);
    expect(after.opened).toBeGreaterThan(before.opened);
  });

  it('resets a counter on a pooled Redis connection only if nobody changed it (WATCH/MULTI)', async () => {
    const name = `r${Date.now()}`;
    for (let i = 0; i < 3; i++) await call(`/counters/${name}`, { method: 'POST' });
    expect(await call(`/counters/${name}/reset`, json('POST', { expected: 2 }))).toMatchObject({
      status: 201,
      body: { name, reset: false, value: 3 },
    });
    expect(await call(`/counters/${name}/reset`, json('POST', { expected: 3 }))).toMatchObject({
      status: 201,
      body: { name, reset: true, value: 0 },
    });
    expect(await call(`/counters/${name}`)).toMatchObject({ body: { value: 0 } });
    expect(await call(`/counters/${name}/reset`, json('POST', { expected: 'x' }))).toMatchObject({ status: 400 });
  });

  it('waits for jobs with BLPOP on pooled connections while plain commands go on on the shared client', async () => {
    const stats = async () => (await call('/pools')).body.redis as { clients: number; counters: { acquired: number } };
    const before = (await stats()).counters.acquired;
    // Two consumers block on the queue, each on a connection of its own.
    const consumers = [call('/jobs/next?waitMs=5000'), call('/jobs/next?waitMs=5000')];
    for (let i = 0; i < 200 && (await stats()).clients < 2; i++) await sleep(10);
    expect(await stats()).toMatchObject({ clients: 2 });
    // Meanwhile the shared client answers plain commands: BLPOP blocks no one else.
    const name = `j${Date.now()}`;
    expect(await call(`/counters/${name}`, { method: 'POST' })).toMatchObject({ status: 201, body: { value: 1 } });
    expect(await call('/jobs', json('POST', { job: 'first' }))).toMatchObject({ status: 201 });
    expect(await call('/jobs', json('POST', { job: 'second' }))).toMatchObject({ status: 201 });
    const jobs = (await Promise.all(consumers)).map((r) => (r.body as { job: string }).job).sort();
    expect(jobs).toEqual(['first', 'second']);
    expect(await call('/jobs/next?waitMs=20')).toMatchObject({ status: 200, body: { job: null } });
    expect(await call('/jobs/next?waitMs=0')).toMatchObject({ status: 400 });
    expect(await stats()).toMatchObject({ clients: 0, counters: { acquired: before + 3 } });
  });

  it('counts on Redis and keeps notes in PostgreSQL', async () => {
    const name = `c${Date.now()}`;
    await call(`/counters/${name}`, { method: 'POST' });
    expect(await call(`/counters/${name}`, { method: 'POST' })).toMatchObject({
      status: 201,
      body: { name, value: 2 },
    });
    expect(await call(`/counters/${name}`)).toMatchObject({ status: 200, body: { name, value: 2 } });
    const text = `note ${Date.now()}`;
    const added = await call('/notes', json('POST', { text }));
    expect(added).toMatchObject({ status: 201, body: { text } });
    expect((await call('/notes')).body.notes).toContainEqual({ id: added.body.id, text });
  });

  it('reports every pool in /health and /pools', async () => {
    const health = await call('/health');
    expect(health.status).toBe(200);
    const pools = (health.body.details as { pools: Record<string, unknown> }).pools;
    expect(Object.keys(pools).sort()).toEqual(['blob', 'pg', 'redis', 'status', 'tenants', 'upstream']);
    expect(pools.status).toBe('up');
    const stats = (await call('/pools')).body as Record<
      string,
      { clients: number; admission: { mode: string } | null; clientLimit: number }
    >;
    expect(Object.keys(stats)).toEqual(['blob', 'upstream', 'redis', 'pg']);
    expect(stats.pg.clientLimit).toBe(1);
    expect(stats.upstream.admission).toMatchObject({
      mode: 'redis',
      perKey: 3,
      adaptive: { algorithm: 'vegas', shared: true, min: 4, max: 400 },
    });
    expect(Object.values(stats).every((s) => s.clients === 0)).toBe(true);
  });

  it('exports every pool’s metrics in Prometheus format on /metrics, as stats() counts them', async () => {
    // Some load on every pool first.
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        fetch(`${sample.url}${['/upstream/7', '/notes', '/files'][i % 3]}`, {
          headers: { 'x-user-id': `u${i % 10}` },
        }).then((r) => r.arrayBuffer()),
      ),
    );
    const res = await fetch(`${sample.url}/metrics`);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const samples = parsePrometheus(await res.text());
    const stats = (await call('/pools')).body as Record<
      string,
      {
        maxSize: number;
        clients: number;
        waiting: number;
        counters: { acquired: number; released: number; timeouts: number };
        admission: { counters: { admitted: number } } | null;
      }
    >;
    for (const [pool, s] of Object.entries(stats)) {
      const v = (name: string, labels: Record<string, string> = {}) => valueOf(samples, name, pool, labels);
      expect({
        pool,
        max: v('db_client_connection_max'),
        pending: v('db_client_connection_pending_requests'),
        timeouts: v('db_client_connection_timeouts_total'),
        clients: v('nestjs_shared_pool_clients'),
      }).toEqual({
        pool,
        max: s.maxSize,
        pending: s.waiting,
        timeouts: s.counters.timeouts,
        clients: s.clients,
      });
      // Every checkout timed its wait and every release its hold; nothing is in flight now.
      expect({
        pool,
        waits: v('db_client_connection_wait_time_count'),
        holds: v('db_client_connection_use_time_count'),
      }).toEqual({ pool, waits: s.counters.acquired, holds: s.counters.released });
      expect(v('nestjs_shared_pool_health', { state: 'healthy' })).toBe(1);
      if (s.admission !== null)
        expect(v('nestjs_shared_pool_limiter_admitted_total')).toBe(s.admission.counters.admitted);
    }
    expect(stats.upstream!.counters.acquired).toBeGreaterThan(10);
    expect(valueOf(samples, 'nestjs_shared_pool_limiter_mode', 'upstream', { mode: 'redis' })).toBe(1);
  });

  it('closes everything on shutdown: no socket or server left open', async () => {
    await sample.close();
    await sleep(100);
    expect(netHandles()).toBeLessThanOrEqual(handlesBefore);
  });
});
