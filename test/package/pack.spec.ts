// `npm pack` on a fresh checkout makes a working package: the build runs as part of packing, the
// compiled code, its types, its source maps and the sources they point at are all in the tarball,
// with the licence; nothing of the tests or the bench is. Then the tarball is installed into new
// projects, as a user would: the core in plain Node with no Nest installed, a Nest app without
// @nestjs/terminus, one with it; the published types compile with skipLibCheck false and no ioredis.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('npm pack', () => {
  let dir: string;
  let files: string[];
  let unpacked: string;
  let tarball: string;

  beforeAll(() => {
    // A fresh checkout: only what git tracks, no dist/ of an earlier build.
    dir = mkdtempSync(join(tmpdir(), 'nsp-pack-'));
    const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' })
      .split('\0')
      .filter(Boolean);
    for (const file of tracked) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      cpSync(join(root, file), join(dir, file));
    }
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
    const [report] = JSON.parse(
      execFileSync('npm', ['pack', '--json', '--loglevel=error'], { cwd: dir, encoding: 'utf8' }),
    ) as {
      filename: string;
      files: { path: string }[];
    }[];
    files = report!.files.map((f) => f.path);
    tarball = join(dir, report!.filename);
    unpacked = join(dir, 'unpacked');
    mkdirSync(unpacked);
    execFileSync('tar', ['xzf', join(dir, report!.filename), '-C', unpacked]);
  }, 120_000);

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('builds as it packs, and ships the code, its types, the licence, the readme and the guides', () => {
    for (const file of [
      'dist/index.js',
      'dist/index.d.ts',
      'dist/core/pool/connection-pool.js',
      'dist/nest/pool.module.js',
      'dist/dashboard/index.js',
      'dist/dashboard/assets/dashboard.js',
      'dist/dashboard/assets/index.html',
      'LICENSE',
      'README.md',
      'docs/core.md',
      'docs/nest.md',
      'package.json',
    ]) {
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

  describe('installed into a new project', () => {
    const fixtures = join(root, 'test', 'package', 'fixtures');
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    /** The version this repository tests with, so that npm finds it in its cache. */
    const version = (name: string) =>
      (JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string })
        .version;
    const npm = (cwd: string, args: string[], prefer: 'offline' | 'online' = 'offline') =>
      execFileSync('npm', [...args, `--prefer-${prefer}`, '--no-audit', '--no-fund', '--loglevel=error'], {
        cwd,
        encoding: 'utf8',
      });

    /** A new ESM project with the tarball and `deps` installed, and `sources` copied from the fixtures. */
    function project(name: string, deps: string[], sources: string[]): string {
      const cwd = join(dir, name);
      mkdirSync(cwd);
      writeFileSync(join(cwd, 'package.json'), JSON.stringify({ name, private: true, type: 'module' }));
      npm(cwd, ['install', tarball, ...deps.map((d) => `${d}@${version(d)}`)]);
      for (const source of sources) cpSync(join(fixtures, source), join(cwd, source));
      return cwd;
    }

    /** Compiles the TypeScript of `cwd` as a strict consumer would: skipLibCheck false. */
    function compile(cwd: string, files: string[]): void {
      const config = {
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          skipLibCheck: false,
          experimentalDecorators: true,
          emitDecoratorMetadata: true,
          types: ['node'],
          outDir: 'out',
        },
        files,
      };
      writeFileSync(join(cwd, 'tsconfig.json'), JSON.stringify(config));
      try {
        execFileSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd, encoding: 'utf8' });
      } catch (err) {
        throw new Error(`tsc failed in ${name(cwd)}:\n${(err as { stdout: string }).stdout}`, { cause: err });
      }
    }
    const name = (cwd: string) => cwd.slice(dir.length + 1);
    const run = (cwd: string, file: string) =>
      JSON.parse(execFileSync(process.execPath, [file], { cwd, encoding: 'utf8' })) as unknown;
    const installed = (cwd: string, pkg: string) => existsSync(join(cwd, 'node_modules', pkg));

    it('runs the core, the limits, the groups and the connectors in plain Node, with no Nest, rxjs or ioredis installed', () => {
      const cwd = project('plain', ['@types/node'], ['core-only.mjs', 'core-types.ts']);
      for (const absent of [
        '@nestjs/common',
        '@nestjs/core',
        '@nestjs/terminus',
        'rxjs',
        'ioredis',
        'reflect-metadata',
      ])
        expect(installed(cwd, absent)).toBe(false);
      expect(run(cwd, 'core-only.mjs')).toEqual({
        ids: [1, 1, 1],
        opened: 1,
        refused: 'CAPACITY_EXCEEDED',
        connector: 'function',
        tenants: ['a', 'b', 'a'],
      });
      compile(cwd, ['core-types.ts']);
    }, 180_000);

    it('boots a Nest app without @nestjs/terminus, then one with it; the types compile without ioredis', () => {
      const cwd = project(
        'nest',
        ['@nestjs/common', '@nestjs/core', 'rxjs', 'reflect-metadata', '@types/node'],
        ['nest-app.ts', 'nest-terminus-app.ts', 'types-in-use.ts'],
      );
      expect(installed(cwd, '@nestjs/terminus')).toBe(false);
      expect(installed(cwd, 'ioredis')).toBe(false);
      compile(cwd, ['nest-app.ts']);
      // The code users write compiles, strict and skipLibCheck false; each @ts-expect-error line must still be an error.
      compile(cwd, ['types-in-use.ts']);
      const pools = { status: 'up', words: expect.objectContaining({ health: 'healthy', size: 1, clients: 0 }) };
      expect(run(cwd, 'out/nest-app.js')).toEqual({ greeting: 'hello, ann', health: { pools } });

      npm(cwd, ['install', `@nestjs/terminus@${version('@nestjs/terminus')}`]);
      compile(cwd, ['nest-terminus-app.ts']);
      const idle = { status: 'up', words: expect.objectContaining({ health: 'healthy', size: 0 }) };
      expect(run(cwd, 'out/nest-terminus-app.js')).toMatchObject({
        status: 'ok',
        info: { pools: idle },
        error: {},
        details: { pools: idle },
      });
    }, 240_000);

    it('compiles against every @types/node from 20 to the newest, and names where pools go when a factory returns them as forRoot takes them', () => {
      const cwd = project(
        'types',
        ['@nestjs/common', '@nestjs/core', 'rxjs', 'reflect-metadata', '@types/node'],
        ['nest-app.ts', 'types-in-use.ts'],
      );
      // @types/node 26 swapped the order of TracingChannel's type parameters, which broke the
      // published pool-events.d.ts there (TS2344) while 20 to 25 compiled.
      for (const major of ['20', '22', '24', '25', '26', 'latest']) {
        // The newest as the registry has it now: a cached list of versions a day old named a
        // version it did not hold yet (ETARGET), once a new one was published.
        npm(cwd, ['install', `@types/node@${major}`], major === 'latest' ? 'online' : 'offline');
        compile(cwd, ['nest-app.ts', 'types-in-use.ts']);
      }
      // The TypeORM shape, pools as an array from the factory: the error says where they belong.
      writeFileSync(
        join(cwd, 'typeorm-shaped.ts'),
        [
          "import { PoolModule } from 'nestjs-shared-pool';",
          'const connector = { create: async () => ({ id: 1 }) };',
          'export const wrong = PoolModule.forRootAsync({',
          "  useFactory: () => ({ pools: [{ name: 'db', connector, options: { maxSize: 4 } }] }),",
          '});',
        ].join('\n'),
      );
      expect(() => compile(cwd, ['typeorm-shaped.ts'])).toThrow(
        /typeorm-shaped\.ts\(4,[^]*property 'pools' are incompatible[^]*forRootAsync's factory gives pools as \{ \[name\]: options \}; each pool's name and connector go in forRootAsync\(\{ pools: \[\{ name, connector \}\], useFactory \}\)/,
      );
    }, 420_000);

    it("serves the dashboard from the installed package, behind the app's guard", () => {
      const cwd = project(
        'dashboard',
        ['@nestjs/common', '@nestjs/core', '@nestjs/platform-express', 'rxjs', 'reflect-metadata', '@types/node'],
        ['dashboard-app.ts'],
      );
      compile(cwd, ['dashboard-app.ts']);
      expect(run(cwd, 'out/dashboard-app.js')).toEqual({
        refused: 403,
        page: true,
        script: [200, true],
        pools: ['words'],
      });
    }, 240_000);

    it("runs a new app's Jest test set up from docs/testing.md alone, with no warning from the recipe", () => {
      const deps = [
        '@nestjs/common',
        '@nestjs/core',
        '@nestjs/testing',
        'rxjs',
        'reflect-metadata',
        '@types/node',
        'jest',
        '@jest/globals',
        'ts-jest',
        '@types/jest',
        'typescript',
      ];
      const cwd = project('jest-app', deps, []);
      cpSync(join(fixtures, 'jest-app', 'catalog.test.ts'), join(cwd, 'catalog.test.ts'));
      const guide = readFileSync(join(root, 'docs', 'testing.md'), 'utf8');
      // The test script and jest.config.js as the page gives them; the tsconfig from its settings.
      const script =
        /`"test": "(node --experimental-vm-modules\s+--no-warnings=ExperimentalWarning\s+node_modules\/jest\/bin\/jest\.js)"`/
          .exec(guide)![1]!
          .replace(/\s+/g, ' ');
      const config = /```js\n\/\/ jest\.config\.js \(excerpt\)\n([\s\S]*?)```/.exec(guide)![1]!;
      expect(guide).toContain('`export default esm;`');
      writeFileSync(join(cwd, 'jest.config.js'), `${config}export default esm;\n`);
      const pkg = JSON.parse(readFileSync(join(cwd, 'package.json'), 'utf8')) as Record<string, unknown>;
      writeFileSync(join(cwd, 'package.json'), JSON.stringify({ ...pkg, scripts: { test: script } }));
      for (const setting of [
        '"experimentalDecorators": true',
        '"emitDecoratorMetadata": true',
        '"isolatedModules": true',
        '"moduleResolution": "NodeNext"',
      ])
        expect(guide).toContain(setting);
      const compilerOptions = {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        experimentalDecorators: true,
        emitDecoratorMetadata: true,
        isolatedModules: true,
        skipLibCheck: false,
        types: ['node', 'jest'],
      };
      writeFileSync(join(cwd, 'tsconfig.json'), JSON.stringify({ compilerOptions }));
      let report: string;
      try {
        // Jest reports on stderr: read both streams, as a terminal shows them.
        report = execFileSync('sh', ['-c', 'npm test --loglevel=error 2>&1'], {
          cwd,
          encoding: 'utf8',
          env: { ...process.env, FORCE_COLOR: '0' },
        });
      } catch (err) {
        throw new Error(`npm test failed in the new app:\n${(err as { stdout: string }).stdout}`, { cause: err });
      }
      expect(report).toContain('Tests:       1 passed, 1 total');
      expect(report).not.toMatch(/ts-jest\[|TS151002|\(node:\d+\) \w*Warning/);
    }, 300_000);
  });
});
