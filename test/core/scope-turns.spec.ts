// A scope lends its exclusive connection to one unit of work at a time: a nested use() called
// from inside the holder goes in at once, a concurrent sibling waits its turn (first come, first
// served, within its own deadline), and nothing waits forever.
import { describe, expect, it } from '@jest/globals';
import { ConnectionPool, ScopeTurnTimeoutError } from '../../lib/index.js';
import { FakeConnector } from '../support/fake-connector.js';

const quiet = { warn: () => {}, error: () => {} };

function exclusivePool(options: { acquireTimeoutMs?: number } = {}) {
  const connector = new FakeConnector();
  connector.clientLimit = 1;
  return new ConnectionPool(connector, { name: 'turns', maxSize: 2, logger: quiet, ...options });
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A unit that logs its start and end around a pause of `turns` ticks. */
async function unit(log: string[], name: string, turns = 3): Promise<string> {
  log.push(`${name}:start`);
  for (let i = 0; i < turns; i++) await tick();
  log.push(`${name}:end`);
  return name;
}

describe('one unit of work at a time per scope', () => {
  it('concurrent nested use() calls run one after another, in the order they asked, on the one connection', async () => {
    const pool = exclusivePool();
    const log: string[] = [];
    const ids = new Set<number>();
    const results = await pool.use(() =>
      Promise.all(
        ['a', 'b', 'c'].map((name) =>
          pool.use((conn) => {
            ids.add(conn.id);
            return unit(log, name);
          }),
        ),
      ),
    );
    expect(results).toEqual(['a', 'b', 'c']);
    expect(log).toEqual(['a:start', 'a:end', 'b:start', 'b:end', 'c:start', 'c:end']);
    expect(ids.size).toBe(1);
    expect(pool.stats()).toMatchObject({ clients: 0 });
    await pool.close();
  });

  it('a call made from inside the holder goes in at once: nested units never wait for their own', async () => {
    const pool = exclusivePool({ acquireTimeoutMs: 200 });
    const log: string[] = [];
    await pool.use(() =>
      Promise.all([
        pool.use(async () => {
          log.push('a:start');
          // Two units of a's own, concurrent with each other: they take turns inside a.
          await Promise.all([pool.use(() => unit(log, 'a1')), pool.use(() => unit(log, 'a2'))]);
          log.push('a:end');
        }),
        pool.use(() => unit(log, 'b')),
      ]),
    );
    expect(log).toEqual(['a:start', 'a1:start', 'a1:end', 'a2:start', 'a2:end', 'a:end', 'b:start', 'b:end']);
    await pool.close();
  });

  it('a sibling that waits past its deadline fails with an error that names the scope and what to change', async () => {
    const pool = exclusivePool();
    let release!: () => void;
    const holding = new Promise<void>((resolve) => (release = resolve));
    const err = await pool.use(async () => {
      const holder = pool.use(() => holding);
      const waiter = pool.use(() => 'never', { timeoutMs: 50 }).catch((e: unknown) => e);
      const got = await waiter;
      release();
      await holder;
      return got;
    });
    expect(err).toBeInstanceOf(ScopeTurnTimeoutError);
    expect((err as ScopeTurnTimeoutError).code).toBe('SCOPE_TURN_TIMEOUT');
    expect((err as Error).message).toMatch(
      /^pool "turns": a nested pool\.use\(\) inside a pool\.use\(\) callback waited \d+ ms for its turn on the scope's connection/,
    );
    expect((err as Error).message).toContain("propagation: 'new'");
    await pool.close();
  });

  it("a sibling's abort ends its wait with the signal's reason; the holder and the next go on", async () => {
    const pool = exclusivePool();
    const controller = new AbortController();
    const log: string[] = [];
    const outcome = await pool.use(async () => {
      const holder = pool.use(() => unit(log, 'holder', 5));
      const aborted = pool.use(() => unit(log, 'aborted'), { signal: controller.signal }).catch((e: unknown) => e);
      const next = pool.use(() => unit(log, 'next'));
      controller.abort(new Error('the caller went away'));
      return Promise.all([holder, aborted, next]);
    });
    expect((outcome[1] as Error).message).toBe('the caller went away');
    expect(log).toEqual(['holder:start', 'holder:end', 'next:start', 'next:end']);
    await pool.close();
  });

  it('a unit still waiting when its scope ends goes on outside it, on a lease of its own', async () => {
    const pool = exclusivePool();
    let late!: Promise<number>;
    let release!: () => void;
    const holding = new Promise<void>((resolve) => (release = resolve));
    await pool.use(async (outer) => {
      void pool.use(() => holding); // a detached holder that outlives the scope
      late = pool.use((conn) => conn.id);
      await tick();
      expect(outer.id).toBe(1);
    });
    const id = await late;
    release();
    expect(id).not.toBe(undefined);
    await pool.close();
  });

  it('a shared connection (clientLimit above 1) lets siblings run together, as before', async () => {
    const pool = new ConnectionPool(new FakeConnector(), { name: 'shared', maxSize: 1, logger: quiet });
    const log: string[] = [];
    await pool.use(() => Promise.all([pool.use(() => unit(log, 'a')), pool.use(() => unit(log, 'b'))]));
    expect(log).toEqual(['a:start', 'b:start', 'a:end', 'b:end']);
    await pool.close();
  });

  it('a unit that throws ends its turn: the next one runs and the scope sees the error', async () => {
    const pool = exclusivePool();
    const log: string[] = [];
    const outcomes = await pool.use(() =>
      Promise.allSettled([
        pool.use(async () => {
          await unit(log, 'a');
          throw new Error('a failed');
        }),
        pool.use(() => unit(log, 'b')),
      ]),
    );
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'fulfilled']);
    expect(log).toEqual(['a:start', 'a:end', 'b:start', 'b:end']);
    expect(pool.stats()).toMatchObject({ clients: 0 });
    await pool.close();
  });
});
