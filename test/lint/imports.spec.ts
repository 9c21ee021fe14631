// The import rules `npm run lint` checks with scripts/check-imports.mjs: no cycles in lib (type-only
// imports count), and a folder entered only through its index.ts.
import { describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
// @ts-expect-error -- a plain ES module of the lint, without types
import { bypassesOf, cyclesOf, importGraph } from '../../scripts/check-imports.mjs';

type Graph = Map<string, Set<string>>;
const cycles = cyclesOf as (graph: Graph) => string[][];
const graphOf = importGraph as (dir: string) => Graph;
const bypasses = bypassesOf as (dir: string) => string[];
const lib = fileURLToPath(new URL('../../lib', import.meta.url));

describe('import cycles', () => {
  it('there are none in lib', () => {
    expect(cycles(graphOf(lib))).toEqual([]);
  });

  it('are found when fed one: a type-only circle of three files, beside files that are not in it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cycles-'));
    try {
      writeFileSync(join(dir, 'a.ts'), "import type { B } from './b.js';\nexport type A = B;\n");
      writeFileSync(join(dir, 'b.ts'), "export type { C as B } from './c.js';\n");
      writeFileSync(
        join(dir, 'c.ts'),
        "import { leaf } from './leaf.js';\nimport type { A } from './a.js';\nexport type C = A | typeof leaf;\n",
      );
      writeFileSync(join(dir, 'leaf.ts'), 'export const leaf = 1;\n');
      expect(cycles(graphOf(dir))).toEqual([[join(dir, 'a.ts'), join(dir, 'b.ts'), join(dir, 'c.ts')]]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('count a file that imports itself', () => {
    expect(
      cycles(
        new Map([
          ['x', new Set(['x'])],
          ['y', new Set(['x'])],
        ]),
      ),
    ).toEqual([['x']]);
  });
});

describe("a folder's index", () => {
  it('is the only way into a folder of lib', () => {
    expect(bypasses(lib)).toEqual([]);
  });

  it('is asked of imports that go around it, at the outermost folder they enter', () => {
    const dir = mkdtempSync(join(tmpdir(), 'faces-'));
    const file = (path: string, text: string) => {
      mkdirSync(join(dir, path, '..'), { recursive: true });
      writeFileSync(join(dir, path), text);
    };
    try {
      file('index.ts', "export * from './core/public.js';\n");
      file('core/public.ts', "export { clock } from './common/index.js';\n");
      file('core/index.ts', "export * from './public.js';\nexport { clock, hidden } from './common/index.js';\n");
      file('core/common/index.ts', "export { clock, hidden } from './clock.js';\n");
      file('core/common/clock.ts', 'export const clock = 1;\nexport const hidden = 2;\n');
      file(
        'core/pool/pool.ts',
        "import { clock } from '../common/index.js';\nimport { hidden } from '../common/clock.js';\nexport const pool = [clock, hidden];\n",
      );
      file(
        'limits/redis/limiter.ts',
        "import { clock } from '../../core/index.js';\nimport { hidden } from '../../core/common/index.js';\nimport { pool } from '../../core/pool/pool.js';\nexport const l = [clock, hidden, pool];\n",
      );
      file('limits/local.ts', "import { clock } from '../core/public.js';\nexport const m = clock;\n");
      expect(bypasses(dir).sort()).toEqual([
        'core/pool/pool.ts imports core/common/clock.ts: import core/common/index.ts instead (export the name there)',
        'limits/local.ts imports core/public.ts: import core/index.ts instead (export the name there)',
        'limits/redis/limiter.ts imports core/common/index.ts: import core/index.ts instead (export the name there)',
        'limits/redis/limiter.ts imports core/pool/pool.ts: import core/index.ts instead (export the name there)',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
