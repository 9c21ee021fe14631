// What the package shows its users: the errors are recognised across two copies of the package,
// and the internals stay out of every entry point.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as root from '../../lib/index.js';
import * as core from '../../lib/core/public.js';
import * as limits from '../../lib/limits/public.js';
import * as connectors from '../../lib/connectors/public.js';
import * as groups from '../../lib/groups/public.js';
import { poolErrorResponse } from '../../lib/index.js';

const here = fileURLToPath(new URL('.', import.meta.url));

describe('errors from another copy of the package', () => {
  let copy: typeof import('../../lib/core/common/errors.js');
  let dir: string;

  beforeAll(async () => {
    // A second copy of the errors module, as a bundled or second installed version would be.
    dir = mkdtempSync(join(here, '.copy-'));
    copyFileSync(join(here, '../../lib/core/common/errors.ts'), join(dir, 'errors.ts'));
    copy = (await import(join(dir, 'errors.ts'))) as typeof copy;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('are instances of this copy’s classes with the same code, and only those', () => {
    const limited = new copy.KeyLimitError('api', 'user:ann', 5, 1_000);
    expect(copy.KeyLimitError).not.toBe(root.KeyLimitError);
    expect(limited).toBeInstanceOf(root.PoolError);
    expect(limited).toBeInstanceOf(root.KeyLimitError);
    expect(limited).not.toBeInstanceOf(root.CapacityExceededError);
    expect(new copy.PoolClosedError('db')).toBeInstanceOf(root.PoolClosedError);
    expect(new root.PoolClosedError('db')).toBeInstanceOf(copy.PoolError);
    expect(new root.PoolClosedError('db')).not.toBeInstanceOf(copy.QueueFullError);
  });

  it('get the HTTP answer of their kind', () => {
    expect(poolErrorResponse(new copy.KeyLimitError('api', 'user:ann', 5, 1_000))).toMatchObject({
      status: 429,
      retryAfterSeconds: 1,
    });
  });

  it('leave plain errors and look-alikes out', () => {
    expect(new Error('x')).not.toBeInstanceOf(root.PoolError);
    expect(Object.assign(new Error('x'), { code: 'KEY_LIMIT', pool: 'api' })).not.toBeInstanceOf(root.KeyLimitError);
    class Mine extends root.KeyLimitError {}
    expect(new root.KeyLimitError('api', 'k', 1, 1)).not.toBeInstanceOf(Mine);
    expect(new Mine('api', 'k', 1, 1)).toBeInstanceOf(root.KeyLimitError);
  });
});

describe('the entry points', () => {
  const internals = [
    'resolveGroupOptions',
    'planAcquire',
    'planRelease',
    'planMembers',
    'kBudget',
    'kMember',
    'resolveOptions',
    'validateConnector',
    'Timers',
    'ProcessHold',
    'MAX_TIMER_MS',
    'brandError',
    'SharedConnection',
    'PoolRegistry',
    'PooledCall',
    'PooledMethodBinder',
    'PoolCoreModule',
    'poolDirectory',
    'RequestKeyInterceptor',
    'withRequestKeys',
    'pooledConnectionAt',
  ];

  it('show no internals', () => {
    for (const entry of [root, core, limits, groups, connectors]) {
      expect(internals.filter((name) => name in entry)).toEqual([]);
    }
  });

  it('keep the core, the limits, the groups and the connectors apart, and the root shows them all', () => {
    expect(Object.keys(core)).toEqual(expect.arrayContaining(['ConnectionPool', 'PoolError', 'Lease', 'systemClock']));
    expect(Object.keys(limits).sort()).toEqual(['AdaptiveLimiter', 'LocalLimiter', 'RedisLimiter', 'classifyCall']);
    expect(Object.keys(connectors).sort()).toEqual(['Http2SessionConnector', 'http2Request']);
    expect(Object.keys(groups).sort()).toEqual(['FleetBudget', 'PoolGroup']);
    for (const name of [
      ...Object.keys(core),
      ...Object.keys(limits),
      ...Object.keys(groups),
      ...Object.keys(connectors),
      'PoolModule',
      'UsePooled',
      'InjectPool',
      'PoolHealthIndicator',
    ]) {
      expect({ name, exported: name in root }).toEqual({ name, exported: true });
    }
  });
});
