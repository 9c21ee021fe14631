// The connector's validate() and close() on their own, bounded by their timeouts on virtual time:
// each outcome is reported once, a hang never holds the pool, and nothing is left armed.
import { describe, expect, it } from '@jest/globals';
import { closeWithin, validateWithin } from '../../lib/core/connections/bounded-calls.js';
import { Timers } from '../../lib/core/common/clock.js';
import { RecordingLogger } from '../support/harness.js';
import { flush, VirtualClock } from '../support/virtual-clock.js';

const never = () => new Promise<never>(() => {});

describe('validateWithin', () => {
  it.each([
    ['alive (true)', () => true, undefined],
    ['alive (undefined)', () => undefined, undefined],
    ['dead (false)', () => false, 'validate() returned false'],
    ['threw', () => Promise.reject(new Error('socket gone')), 'socket gone'],
    [
      'threw synchronously',
      () => {
        throw new Error('sync boom');
      },
      'sync boom',
    ],
  ] as [string, () => boolean | void | Promise<boolean>, string | undefined][])(
    'reports %s once',
    async (_, validate, failure) => {
      const clock = new VirtualClock();
      const seen: unknown[] = [];
      validateWithin(validate, 'conn', new Timers(clock), 100, {
        done: (f) => seen.push(f),
        lateFailure: () => seen.push('late'),
      });
      await flush();
      expect(seen).toHaveLength(1);
      if (failure === undefined) expect(seen[0]).toBeUndefined();
      else expect((seen[0] as Error).message).toBe(failure);
      expect(clock.pending).toBe(0);
    },
  );

  it('fails a hanging check at its timeout, and ignores it if it settles later', async () => {
    const clock = new VirtualClock();
    const seen: unknown[] = [];
    let settle!: (alive: boolean) => void;
    validateWithin(() => new Promise<boolean>((r) => (settle = r)), 'conn', new Timers(clock), 100, {
      done: (f) => seen.push(f),
      lateFailure: () => seen.push('late'),
    });
    await clock.advance(99);
    expect(seen).toEqual([]);
    await clock.advance(1);
    expect((seen[0] as Error).message).toBe('validate() did not settle within validateTimeoutMs (100 ms)');
    settle(true);
    await flush();
    expect(seen).toHaveLength(1);
  });

  it('ends at once as alive when told (the pool closes), leaving no timer', async () => {
    const clock = new VirtualClock();
    const seen: unknown[] = [];
    const end = validateWithin(never, 'conn', new Timers(clock), 100, {
      done: (f) => seen.push(f),
      lateFailure: () => seen.push('late'),
    });
    end();
    end();
    expect(seen).toEqual([undefined]);
    expect(clock.pending).toBe(0);
  });

  it.each([
    ['dead (false)', false, [undefined, 'late']],
    ['alive', true, [undefined]],
  ] as [string, boolean, unknown[]][])(
    'a check cut short that then settles %s is reported late only if dead, once',
    async (_, alive, reported) => {
      const clock = new VirtualClock();
      const seen: unknown[] = [];
      let settle!: (alive: boolean) => void;
      const end = validateWithin(() => new Promise<boolean>((r) => (settle = r)), 'conn', new Timers(clock), 100, {
        done: (f) => seen.push(f),
        lateFailure: () => seen.push('late'),
      });
      end();
      settle(alive);
      await flush();
      await clock.advance(200);
      expect(seen).toEqual(reported);
    },
  );
});

describe('closeWithin', () => {
  it('resolves when close() settles; a failure is logged, never thrown', async () => {
    const clock = new VirtualClock();
    const logger = new RecordingLogger();
    await closeWithin(() => Promise.reject(new Error('already closed')), 'conn', new Timers(clock), 100, logger, 'db');
    await closeWithin(
      () => {
        throw new Error('sync');
      },
      'conn',
      new Timers(clock),
      100,
      logger,
      'db',
    );
    expect(logger.errors.join('\n')).toMatch(
      /pool "db": closing a connection failed: already closed[\s\S]*closing a connection failed: sync/,
    );
    expect(clock.pending).toBe(0);
  });

  it('stops waiting for a hanging close() at its timeout, with a warning', async () => {
    const clock = new VirtualClock();
    const logger = new RecordingLogger();
    let done = false;
    void closeWithin(never, 'conn', new Timers(clock), 100, logger, 'db').then(() => (done = true));
    await clock.advance(99);
    expect(done).toBe(false);
    await clock.advance(1);
    expect(done).toBe(true);
    expect(logger.warnings.join('\n')).toMatch(
      /pool "db": a connection's close\(\) did not settle within closeTimeoutMs \(100 ms\)/,
    );
  });
});
