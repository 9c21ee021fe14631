// `npm test` sets itself up on a fresh machine of this project's kind (Jest's global setup,
// test/support/prerequisites.mjs): what is missing it starts or installs as root, and otherwise
// it stops before any test with the one command that does.
import { afterEach, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import prerequisites from '../support/prerequisites.mjs';

describe("npm test's prerequisites", () => {
  const had = process.env.CHROMIUM_PATH;
  afterEach(() => {
    if (had === undefined) delete process.env.CHROMIUM_PATH;
    else process.env.CHROMIUM_PATH = had;
  });

  it('finds everything on this machine: the services answer and Chromium is installed', async () => {
    await expect(prerequisites()).resolves.toBeUndefined();
    expect(existsSync(had ?? '/usr/bin/chromium')).toBe(true);
  });

  it('stops at once, naming what is missing and the one command that sets it up', async () => {
    process.env.CHROMIUM_PATH = '/nowhere/chromium'; // a browser it must not install over
    const started = Date.now();
    const failing = prerequisites();
    await expect(failing).rejects.toThrow('npm test needs Chromium (/nowhere/chromium');
    await expect(failing).rejects.toThrow(/\n\n {2}sudo \/\S+\/scripts\/test-prerequisites\.sh\n\n/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
