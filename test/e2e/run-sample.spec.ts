// `npm start` (scripts/run-sample.mjs) compiles only when a source changed since the last build,
// so a start with nothing changed runs the app at once. Run in a copy of the repository, so the
// builds here never race the other tests' (the package test rebuilds dist/).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
let copy: string;

/** Runs the core example through the start script; its output and whether each build ran. */
function start(): { out: string; libBuilt: number; sampleBuilt: number } {
  const out = execFileSync(process.execPath, ['scripts/run-sample.mjs', 'core-example'], {
    cwd: copy,
    encoding: 'utf8',
    timeout: 120_000,
  });
  const built = (file: string) => statSync(join(copy, file)).mtimeMs;
  return { out, libBuilt: built('dist/.tsbuildinfo'), sampleBuilt: built('dist-sample/.tsbuildinfo') };
}

beforeAll(() => {
  copy = mkdtempSync(join(tmpdir(), 'run-sample-'));
  for (const item of ['lib', 'sample-app', 'scripts', 'tsconfig.json', 'tsconfig.build.json', 'package.json'])
    cpSync(join(root, item), join(copy, item), { recursive: true });
  symlinkSync(join(root, 'node_modules'), join(copy, 'node_modules'));
});
afterAll(() => rmSync(copy, { recursive: true, force: true }));

describe('the start script', () => {
  it('builds once, starts from the build while nothing changed, and rebuilds after a change', () => {
    const first = start();
    expect(first.out).toMatch(/^500 requests over \d sessions; health healthy$/m);
    const again = start();
    expect(again.out).toMatch(/500 requests over/);
    expect([again.libBuilt, again.sampleBuilt]).toEqual([first.libBuilt, first.sampleBuilt]); // no compile
    appendFileSync(join(copy, 'sample-app/core-example.ts'), '\n// changed\n');
    const changed = start();
    expect(changed.out).toMatch(/500 requests over/);
    expect(changed.libBuilt).toBe(first.libBuilt); // the library did not change
    expect(changed.sampleBuilt).toBeGreaterThan(first.sampleBuilt);
  }, 180_000);
});
