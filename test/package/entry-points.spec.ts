// The package's entry points (package.json "exports") and every name each one exports, types
// included, as the TypeScript compiler sees them: a change to this list is a change of the public
// API, made on purpose in fixtures/entry-points.json, never by moving files around.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string): unknown => JSON.parse(readFileSync(`${root}${path}`, 'utf8'));

/** The source of an entry's types: `./dist/core/public.d.ts` is built from `lib/core/public.ts`. */
const sourceOf = (types: string) => `${root}${types.replace(/^\.\/dist\//, 'lib/').replace(/\.d\.ts$/, '.ts')}`;

describe('the entry points', () => {
  it('export what fixtures/entry-points.json lists, no more and no less', () => {
    const exports = (read('package.json') as { exports: Record<string, string | { types: string }> }).exports;
    const entries = Object.entries(exports).flatMap(([entry, target]) =>
      typeof target === 'string' ? [] : [[entry, sourceOf(target.types)] as const],
    );
    const program = ts.createProgram(
      entries.map(([, file]) => file),
      {
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        target: ts.ScriptTarget.ES2022,
        experimentalDecorators: true,
        skipLibCheck: true,
        noEmit: true,
      },
    );
    const checker = program.getTypeChecker();
    const names = Object.fromEntries(
      entries.map(([entry, file]) => [
        entry,
        checker
          .getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(file)!)!)
          .map((s) => s.name)
          .sort(),
      ]),
    );
    expect(names).toEqual(read('test/package/fixtures/entry-points.json'));
  });
});
