// Traces through @opentelemetry/api, as an app with the OpenTelemetry SDK and
// @opentelemetry/instrumentation-pg sees them (in-memory exporter, real PostgreSQL), in a process of
// its own (test/core/fixtures/traced-app.mjs): a checkout that waited shows the wait in the
// caller's trace; the pool's own statements show in no caller's trace; on the pg.Pool face,
// instrumentation-pg's spans are there, with the parents and attributes pg.Pool gives them.
import { beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { compile, root } from '../support/compile.js';
import { DATABASE_URL } from '../support/pg-ledger.js';

interface Span {
  name: string;
  id: string;
  trace: string;
  parent: string | null;
  attributes: Record<string, unknown>;
  status: number;
  ms: number;
}
const ERROR = 2;

let spans: Span[];
const named = (name: string) => spans.find((s) => s.name === name)!;
const childrenOf = (span: Span) => spans.filter((s) => s.parent === span.id);
const traceOf = (span: Span) => spans.filter((s) => s.trace === span.trace && s !== span);
const waitsOf = (request: string) => traceOf(named(request)).filter((s) => s.name === 'nestjs-shared-pool.wait');

beforeAll(() => {
  const dist = join(root, 'dist-test-traces');
  compile('tsconfig.build.json', dist);
  const out = execFileSync(process.execPath, [join(root, 'test/core/fixtures/traced-app.mjs'), dist, DATABASE_URL], {
    cwd: root,
    encoding: 'utf8',
  });
  spans = JSON.parse(out) as Span[];
}, 90_000);

describe('traces of the pool', () => {
  it("a request that waited for a connection shows the wait in its trace, with the pool's name", () => {
    const [wait, ...more] = waitsOf('request B');
    expect(more).toEqual([]);
    expect(wait!.parent).toBe(named('request B').id);
    expect(wait!.attributes).toMatchObject({
      'db.client.connection.pool.name': 'db',
      'nestjs_shared_pool.wait.for': 'connection',
      'nestjs_shared_pool.wait.timeout_ms': 60_000,
    });
    expect(wait!.status).not.toBe(ERROR);
    expect(wait!.ms).toBeGreaterThanOrEqual(20); // A held the only connection for 60 ms, from 10 ms before B asked
    const query = traceOf(named('request B')).filter((s) => s.name.startsWith('pg.query'));
    expect(query.map((s) => [s.attributes['db.query.text'], s.parent])).toEqual([
      ['SELECT 2 AS two', named('request B').id],
    ]);
  });

  it('a wait past its deadline ends in error, with the error type', () => {
    const failed = waitsOf('request C').filter((s) => s.status === ERROR);
    expect(failed.map((s) => s.attributes['error.type'])).toEqual(['CONNECTIONS_EXHAUSTED']);
    expect(failed[0]!.attributes['nestjs_shared_pool.wait.timeout_ms']).toBe(30);
  });

  it("no statement of the pool's own (connects, readiness, validations, resets) is in a caller's trace", () => {
    for (const request of ['request A', 'request B', 'request C', 'request D', 'request E', 'request F']) {
      const own = traceOf(named(request)).filter(
        (s) =>
          s.name === 'pg.connect' ||
          (s.name.startsWith('pg.query') && ['SELECT 1', 'ROLLBACK'].includes(String(s.attributes['db.query.text']))),
      );
      expect([request, own.map((s) => s.name)]).toEqual([request, []]);
    }
    // They happened, in traces of their own: the first connect, the validations, A's transaction rolled back.
    const roots = spans.filter((s) => s.parent === null).map((s) => String(s.attributes['db.query.text'] ?? s.name));
    expect(roots).toEqual(expect.arrayContaining(['pg.connect', 'SELECT 1', 'ROLLBACK']));
    // A's own BEGIN stays A's.
    expect(childrenOf(named('request A')).map((s) => s.attributes['db.query.text'])).toContain('BEGIN');
  });

  it("on the face, instrumentation-pg's pg-pool.connect and query spans are under the request", () => {
    const d = named('request D');
    expect(
      childrenOf(d)
        .map((s) => s.name)
        .sort(),
    ).toEqual(['pg-pool.connect', 'pg.query:SELECT test']);
  });

  it('a failed query on the face has the span pg.Pool gives it: same name, attributes and status', () => {
    const [face] = traceOf(named('request E')).filter((s) => s.name.startsWith('pg.query'));
    const [real] = traceOf(named('request H')).filter((s) => s.name.startsWith('pg.query'));
    expect(face!.parent).toBe(named('request E').id);
    expect([face!.name, face!.attributes, face!.status]).toEqual([real!.name, real!.attributes, real!.status]);
    expect(face!.status).toBe(ERROR);
  });

  it("a unit of work that waits for the scope's turn shows that wait", () => {
    const turns = waitsOf('request F').filter((s) => s.attributes['nestjs_shared_pool.wait.for'] === 'turn');
    expect(turns).toHaveLength(1);
    expect(turns[0]!.ms).toBeGreaterThanOrEqual(20); // the first unit held the connection for 30 ms
  });

  it('a pool with tracing: false makes no span of its own, and leaves its connects where they happen', () => {
    expect(waitsOf('request G')).toEqual([]);
    expect(traceOf(named('request G')).map((s) => s.name)).toContain('pg.connect');
  });
});
