// `npm pack` on a fresh checkout makes a working package: the build runs as part of packing, the
// compiled code, its types, its source maps and the sources they point at are all in the tarball,
// with the licence; nothing of the tests or the bench is.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('npm pack', () => {
  let dir: string;
  let files: string[];
  let unpacked: string;

  beforeAll(() => {
    // A fresh checkout: only what git tracks, no dist/ of an earlier build.
    dir = mkdtempSync(join(tmpdir(), 'nsp-pack-'));
    const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' }).split('\0').filter(Boolean);
    for (const file of tracked) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      cpSync(join(root, file), join(dir, file));
    }
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
    const [report] = JSON.parse(execFileSync('npm', ['pack', '--json', '--loglevel=error'], { cwd: dir, encoding: 'utf8' })) as {
      filename: string;
      files: { path: string }[];
    }[];
    files = report!.files.map((f) => f.path);
    unpacked = join(dir, 'unpacked');
    mkdirSync(unpacked);
    execFileSync('tar', ['xzf', join(dir, report!.filename), '-C', unpacked]);
  }, 120_000);

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('builds as it packs, and ships the code, its types, the licence and the readme', () => {
    for (const file of ['dist/index.js', 'dist/index.d.ts', 'dist/core/connection-pool.js', 'dist/nest/pool.module.js', 'LICENSE', 'README.md', 'package.json']) {
      expect(files).toContain(file);
    }
    expect(readFileSync(join(unpacked, 'package', 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
  });

  it('ships nothing of the tests, the bench or the sample app', () => {
    expect(files.filter((f) => /^(test|bench|sample-app|\.ci|dist-\w+)\//.test(f))).toEqual([]);
  });

  it('ships the source every source map points at', () => {
    const maps = files.filter((f) => f.endsWith('.js.map'));
    expect(maps.length).toBeGreaterThan(20);
    for (const map of maps) {
      const { sources } = JSON.parse(readFileSync(join(unpacked, 'package', map), 'utf8')) as { sources: string[] };
      for (const source of sources) expect(files).toContain(posix.join(posix.dirname(map), source));
    }
  });
});
