// One formatter: `npm run lint` runs `prettier --check` with the repository's settings, so code
// that Prettier would change fails the lint. Fed a badly formatted file where the library's code
// lives, the check refuses it; the same code formatted passes.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';

const root = fileURLToPath(new URL('../../', import.meta.url));

describe('formatting (npm run lint)', () => {
  const file = `${root}lib/core/pool/probe.ts`;
  const unformatted = 'export   const limits = {global: 10, perKey : 2}\nexport function f(a:number){return a*2}\n';

  it('is part of the lint', () => {
    const scripts = (JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { scripts: Record<string, string> })
      .scripts;
    expect(scripts.lint).toContain('prettier --check .');
  });

  it('covers the library, with the repository settings', async () => {
    expect((await prettier.getFileInfo(file, { ignorePath: `${root}.prettierignore` })).ignored).toBe(false);
    expect(await prettier.resolveConfig(file)).toMatchObject({ printWidth: 120, singleQuote: true });
  });

  it('refuses unformatted code, and takes it formatted', async () => {
    const options = { ...(await prettier.resolveConfig(file)), filepath: file };
    expect(await prettier.check(unformatted, options)).toBe(false);
    const formatted = await prettier.format(unformatted, options);
    expect(formatted).toBe(
      'export const limits = { global: 10, perKey: 2 };\nexport function f(a: number) {\n  return a * 2;\n}\n',
    );
    expect(await prettier.check(formatted, options)).toBe(true);
  });
});
