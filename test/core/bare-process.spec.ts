// The pool in a plain Node process with nothing else alive (a CLI, a cron job): a pending acquire
// keeps the process alive until it settles; an idle pool never does.
import { beforeAll, describe, expect, it } from '@jest/globals';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'bare-'));

/** Runs an ES module script that imports the compiled core as `core`; resolves with its exit code and output. */
function run(body: string): Promise<{ code: number | null; out: string; ms: number }> {
  const file = join(dir, `script-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(file, `import * as core from './core/public.js';\n${body}\n`);
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(process.execPath, [file], { timeout: 15_000 }, (err, stdout, stderr) => {
      resolve({
        code: err === null ? 0 : ((err as { code?: number }).code ?? null),
        out: stdout + stderr,
        ms: Date.now() - started,
      });
    });
  });
}

beforeAll(() => {
  // Only the core: plain TypeScript on node: built-ins.
  execFileSync(process.execPath, [
    join(root, 'node_modules/typescript/bin/tsc'),
    join(root, 'lib/core/public.ts'),
    ...['--outDir', dir, '--rootDir', join(root, 'lib'), '--module', 'nodenext', '--moduleResolution', 'nodenext'],
    ...['--target', 'es2022', '--lib', 'es2022,esnext.disposable', '--types', 'node', '--skipLibCheck', '--strict'],
  ]);
}, 60_000);

describe('a pool in a bare process', () => {
  it('a pending acquire keeps the process alive until its deadline, and the rejection is seen', async () => {
    const { code, out } = await run(`
      const pool = new core.ConnectionPool({ create: () => new Promise(() => {}) }, { logger: { warn() {}, error() {} } });
      try {
        await pool.acquire({ timeoutMs: 300 });
        console.log('acquired');
      } catch (err) {
        console.log('rejected', err.code);
      }
      await pool.close({ graceMs: 0 });
      console.log('closed');
    `);
    expect(out).toBe('rejected CONNECTIONS_EXHAUSTED\nclosed\n');
    expect(code).toBe(0);
  });

  it('a caller in an outage fails fast with the connect error instead of the process exiting silently', async () => {
    const { code, out } = await run(`
      const pool = new core.ConnectionPool({ create: async () => { throw new Error('connect ECONNREFUSED'); } }, { logger: { warn() {}, error() {} } });
      await pool.acquire().catch((err) => console.log('rejected', err.code, err.cause.cause.message));
      await pool.close();
    `);
    expect(out).toBe('rejected CONNECTION_FAILED connect ECONNREFUSED\n');
    expect(code).toBe(0);
  });

  it('an idle pool with open connections does not keep the process alive', async () => {
    const { code, out, ms } = await run(`
      const pool = new core.ConnectionPool({ create: async () => ({}) }, { minSize: 2 });
      await pool.warmup();
      const lease = await pool.acquire();
      lease.release();
      console.log('idle', pool.stats().ready);
    `);
    expect(out).toBe('idle 2\n');
    expect(code).toBe(0);
    expect(ms).toBeLessThan(10_000);
  });

  // Node 20 and 22 carry AsyncLocalStorage through a promise hook, turned on by the first scope;
  // Node 24 carries it in the async context frame, with no hook at all.
  const hookTurnsOn = Number(process.versions.node.split('.')[0]) < 24;
  it(`propagation 'none' never turns on AsyncLocalStorage's promise hook; a scoped use() ${hookTurnsOn ? 'does' : 'does not either (Node 24)'}`, async () => {
    // With no promise hook, a promise continuation runs with async id 0; with it, not.
    const { code, out } = await run(`
      const { executionAsyncId } = await import('node:async_hooks');
      const idInThen = () => Promise.resolve().then(() => executionAsyncId());
      const pool = new core.ConnectionPool({ create: async () => ({ id: 1 }) }, { clientLimit: 1, maxSize: 2 });
      const seen = [];
      for (let i = 0; i < 20; i++) {
        seen.push(await pool.use(async (conn) => {
          await new Promise((r) => setTimeout(r, 1));
          try { pool.current; return 'scoped'; } catch (err) { return err.code + ':' + conn.id; }
        }, { propagation: 'none' }));
      }
      console.log(new Set(seen).size === 1 ? seen[0] : seen.join(), await idInThen());
      await pool.use(async () => {});
      console.log('after a scoped use()', (await idInThen()) > 0);
      await pool.close();
    `);
    expect(out).toBe(`POOL_CONTEXT:1 0\nafter a scoped use() ${hookTurnsOn}\n`);
    expect(code).toBe(0);
  });
});
