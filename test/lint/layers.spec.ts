// The layer rule of eslint.config.js, on code placed (virtually) in each layer: an import of an
// upper layer fails `npm run lint`, with the rule's message; imports of lower layers pass. And the
// map of the code in docs/internals.md names only files that exist.
import { describe, expect, it } from '@jest/globals';
import { ESLint } from 'eslint';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const eslint = new ESLint({ cwd: root });

async function problems(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${root}${file}` });
  return result!.messages.filter((m) => m.ruleId === '@typescript-eslint/no-restricted-imports').map((m) => m.message);
}

describe('layer boundaries (npm run lint)', () => {
  it.each([
    ['lib/core/x.ts', "import { PoolModule } from '../nest/pool.module.js';", /lib\/core knows only pools/],
    ['lib/core/x.ts', "import type { RedisLimiter } from '../limits/redis-limiter.js';", /lib\/core knows only pools/],
    ['lib/core/x.ts', "import { Injectable } from '@nestjs/common';", /lib\/core knows only pools/],
    ['lib/core/x.ts', "import { Redis } from 'ioredis';", /lib\/core knows only pools/],
    ['lib/limits/x.ts', "import { PoolModule } from '../nest/index.js';", /lib\/limits builds on lib\/core only/],
    [
      'lib/connectors/x.ts',
      "import { RedisLimiter } from '../limits/index.js';",
      /lib\/connectors build on lib\/core only/,
    ],
    [
      'lib/groups/x.ts',
      "import { PoolModule } from '../nest/index.js';",
      /lib\/groups build on lib\/core and lib\/limits only/,
    ],
    ['lib/core/x.ts', "import { PoolDashboardModule } from '../dashboard/index.js';", /lib\/core knows only pools/],
    [
      'lib/nest/x.ts',
      "import { PoolDashboardModule } from '../dashboard/index.js';",
      /lib\/nest does not know the dashboard/,
    ],
    ['lib/core/pool/x.ts', "import { RedisLimiter } from '../../limits/index.js';", /lib\/core knows only pools/],
    ['lib/core/common/x.ts', "import { PoolModule } from '../../index.js';", /lib\/core knows only pools/],
    [
      'lib/limits/redis/x.ts',
      "import { PoolGroup } from '../../groups/index.js';",
      /lib\/limits builds on lib\/core only/,
    ],
    [
      'lib/connectors/pg/x.ts',
      "import { LocalLimiter } from '../../limits/index.js';",
      /lib\/connectors build on lib\/core only/,
    ],
  ])('%s may not %s', async (file, code, message) => {
    const found = await problems(file, `${code}\nexport const used = [${code.match(/\{ (\w+) \}/)![1]}];\n`);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(message);
  });

  it.each([
    ['lib/limits/x.ts', "import { PoolConfigError } from '../core/index.js';"],
    ['lib/nest/x.ts', "import { RedisLimiter } from '../limits/index.js';"],
    ['lib/connectors/x.ts', "import { PoolConfigError } from '../core/index.js';"],
    ['lib/groups/x.ts', "import { ConnectionPool } from '../core/index.js';"],
    ['lib/dashboard/x.ts', "import { PoolRegistry } from '../nest/index.js';"],
    ['lib/limits/redis/x.ts', "import { Timers } from '../../core/index.js';"],
    ['lib/core/pool/x.ts', "import { Timers } from '../common/index.js';"],
  ])('%s may %s', async (file, code) => {
    expect(await problems(file, `${code}\nexport const used = [${code.match(/\{ (\w+) \}/)![1]}];\n`)).toEqual([]);
  });
});

describe('file length (npm run lint)', () => {
  const lengthProblems = async (file: string, lines: number) => {
    const [result] = await eslint.lintText(
      Array.from({ length: lines }, (_, i) => `export const v${i} = ${i};`).join('\n') + '\n',
      { filePath: `${root}${file}` },
    );
    return result!.messages.filter((m) => m.ruleId === 'max-lines').map((m) => m.message);
  };

  it('refuses a lib file over 400 lines, and takes one of 400', async () => {
    expect(await lengthProblems('lib/limits/x.ts', 401)).toEqual([expect.stringContaining('Maximum allowed is 400')]);
    expect(await lengthProblems('lib/limits/x.ts', 400)).toEqual([]);
  });
});

describe('the map of the code in docs/internals.md', () => {
  it('names only files and folders that exist', () => {
    const readme = readFileSync(`${root}docs/internals.md`, 'utf8');
    const paths = [...readme.matchAll(/`(lib\/[\w./-]+)`/g)].map((m) => m[1]!);
    expect(paths.length).toBeGreaterThan(10);
    expect(paths.filter((p) => !existsSync(`${root}${p}`))).toEqual([]);
  });
});
