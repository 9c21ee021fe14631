#!/usr/bin/env node
// Generates the Prisma client of test/orms/prisma/schema.prisma, offline, unless the client was
// made from this schema by this Prisma: `npm run typecheck` and Jest's global setup call it.
//
// Prisma's CLI fetches its schema engine from binaries.prisma.sh before any command, though
// `generate` never runs it (Prisma 7 generates with WebAssembly). Naming an engine binary skips
// the fetch; the one named is never started.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const schema = `${root}test/orms/prisma/schema.prisma`;
const stamp = `${root}test/orms/prisma/client/.generated-from`;
const version = createRequire(import.meta.url)('prisma/package.json').version;
const wanted = `${version} ${createHash('sha256').update(readFileSync(schema)).digest('hex')}`;

export function generatePrisma() {
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === wanted) return;
  execFileSync(process.execPath, [`${root}node_modules/prisma/build/index.js`, 'generate', '--schema', schema], {
    cwd: root,
    env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: process.execPath, PRISMA_HIDE_UPDATE_MESSAGE: '1' },
    stdio: 'pipe',
  });
  writeFileSync(stamp, wanted);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) generatePrisma();
