// No import cycles in lib (type-only imports count), as `npm run lint` checks with scripts/import-cycles.mjs.
import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
// @ts-expect-error -- a plain ES module of the lint, without types
import { cyclesOf, importGraph } from '../../scripts/import-cycles.mjs';

type Graph = Map<string, Set<string>>;
const cycles = cyclesOf as (graph: Graph) => string[][];
const graphOf = importGraph as (dir: string) => Graph;

describe('import cycles', () => {
  it('there are none in lib', () => {
    expect(cycles(graphOf(fileURLToPath(new URL('../../lib', import.meta.url))))).toEqual([]);
  });

  it('are found when fed one: a type-only circle of three files, beside files that are not in it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cycles-'));
    try {
      writeFileSync(join(dir, 'a.ts'), "import type { B } from './b.js';\nexport type A = B;\n");
      writeFileSync(join(dir, 'b.ts'), "export type { C as B } from './c.js';\n");
      writeFileSync(join(dir, 'c.ts'), "import { leaf } from './leaf.js';\nimport type { A } from './a.js';\nexport type C = A | typeof leaf;\n");
      writeFileSync(join(dir, 'leaf.ts'), 'export const leaf = 1;\n');
      expect(cycles(graphOf(dir))).toEqual([[join(dir, 'a.ts'), join(dir, 'b.ts'), join(dir, 'c.ts')]]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('count a file that imports itself', () => {
    expect(cycles(new Map([['x', new Set(['x'])], ['y', new Set(['x'])]]))).toEqual([['x']]);
  });
});
