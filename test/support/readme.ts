import { readdirSync, readFileSync } from 'node:fs';

/** The repository root. */
export const root = new URL('../../', import.meta.url);

/** A ```ts or ```js block of the README, with the file its first line names (`// path` or `// path (excerpt)`). */
export interface ReadmeBlock {
  header: string;
  file: string;
  excerpt: boolean;
  code: string;
}

/** The README and the guides under docs/, README first, then the guides by name. */
export function docPages(): string[] {
  return [
    'README.md',
    ...readdirSync(new URL('docs/', root))
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => `docs/${f}`),
  ];
}

/** Every ```ts or ```js block of the README and of the guides, in that order. */
export function readmeBlocks(): ReadmeBlock[] {
  return docPages().flatMap((page) => blocksOf(readFileSync(new URL(page, root), 'utf8')));
}

function blocksOf(readme: string): ReadmeBlock[] {
  return [...readme.matchAll(/```(?:ts|js)\n([^\n]*)\n([\s\S]*?)```/g)].map((m) => {
    const header = /^\/\/ ((?:sample-app|test|lib)\/\S+|jest\.config\.js)( \(excerpt\))?$/.exec(m[1]);
    return { header: m[1], file: header?.[1] ?? '', excerpt: header?.[2] !== undefined, code: m[2] };
  });
}

/** The text of a file of the repository. */
export function source(file: string): string {
  return readFileSync(new URL(file, root), 'utf8');
}
