// Compiles a TypeScript project of this repository to plain JavaScript in `outDir`, for tests that
// run it in processes of their own (several instances of a limiter, simulations kept out of Jest's
// module sandbox). No declarations, no source maps: nothing but what node runs.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../../', import.meta.url));

/** `project`: a tsconfig, from the repository's root. */
export function compile(project: string, outDir: string): void {
  execFileSync(process.execPath, [
    join(root, 'node_modules/typescript/bin/tsc'),
    ...['-p', join(root, project), '--outDir', outDir],
    ...['--declaration', 'false', '--sourceMap', 'false'],
  ]);
}
