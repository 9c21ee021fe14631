// The sample app's dashboard is never public in production: without DASHBOARD_PASSWORD nobody
// sees it, with one only a browser that signs in as ops does (and the stream sends nothing else).
import { afterEach, describe, expect, it } from '@jest/globals';
import { startSample, type RunningSample } from '../../sample-app/main.js';

describe('the sample app’s dashboard in production', () => {
  let sample: RunningSample | undefined;
  afterEach(async () => {
    await sample?.close();
    sample = undefined;
  });

  it('refuses everyone when no DASHBOARD_PASSWORD is set', async () => {
    sample = await startSample({
      port: 0,
      logger: false,
      env: { NODE_ENV: 'production' },
      upstream: { handshakeDelayMs: 10 },
    });
    for (const path of ['/pools/ui', '/pools/ui/stream', '/pools/ui/snapshot', '/pools/ui/dashboard.js']) {
      const res = await fetch(`${sample.url}${path}`, {
        headers: { authorization: `Basic ${Buffer.from('ops:').toString('base64')}` },
      });
      expect([path, res.status]).toEqual([path, 403]);
      expect(await res.text()).not.toContain('"pools"');
    }
  });

  it('asks for the password, and lets ops in with it', async () => {
    sample = await startSample({
      port: 0,
      logger: false,
      env: { NODE_ENV: 'production', DASHBOARD_PASSWORD: 'correct horse' },
      upstream: { handshakeDelayMs: 10 },
    });
    const anonymous = await fetch(`${sample.url}/pools/ui/snapshot`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toBe('Basic realm="pool dashboard", charset="UTF-8"');
    const wrong = await fetch(`${sample.url}/pools/ui/snapshot`, {
      headers: { authorization: `Basic ${Buffer.from('ops:wrong').toString('base64')}` },
    });
    expect(wrong.status).toBe(401);
    const ops = await fetch(`${sample.url}/pools/ui/snapshot`, {
      headers: { authorization: `Basic ${Buffer.from('ops:correct horse').toString('base64')}` },
    });
    expect(ops.status).toBe(200);
    expect(((await ops.json()) as { pools: { name: string }[] }).pools.map((p) => p.name)).toEqual([
      'blob',
      'upstream',
    ]);
  });

  it('is open on a developer’s machine (NODE_ENV not production)', async () => {
    sample = await startSample({ port: 0, logger: false, env: {}, upstream: { handshakeDelayMs: 10 } });
    expect((await fetch(`${sample.url}/pools/ui/snapshot`)).status).toBe(200);
  });
});
