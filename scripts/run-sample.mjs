// `npm start`, `npm run load`, `npm run example`: runs a sample-app entry from its build, compiling
// first only when a source or config is newer than the last build (tsc's incremental build info).
// A start with nothing changed skips the compiler: it answers within the app's own start-up.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const entry = process.argv[2] ?? 'main';
const tsc = join(root, 'node_modules/typescript/bin/tsc');

/** The newest modification time under `dir` (files ending in .ts), 0 when there is none. */
function newest(dir) {
  let latest = 0;
  for (const item of readdirSync(join(root, dir), { withFileTypes: true, recursive: true })) {
    if (item.isFile() && item.name.endsWith('.ts'))
      latest = Math.max(latest, statSync(join(item.parentPath, item.name)).mtimeMs);
  }
  return latest;
}

const builds = [
  // The library: the sample imports it by its package name, which resolves to dist/.
  { project: 'tsconfig.build.json', info: 'dist/.tsbuildinfo', sources: ['lib'] },
  { project: 'sample-app/tsconfig.json', info: 'dist-sample/.tsbuildinfo', sources: ['lib', 'sample-app'] },
];
const configs = Math.max(
  ...['tsconfig.json', 'tsconfig.build.json', 'sample-app/tsconfig.json', 'package.json'].map(
    (f) => statSync(join(root, f)).mtimeMs,
  ),
);
for (const { project, info, sources } of builds) {
  const built = existsSync(join(root, info)) ? statSync(join(root, info)).mtimeMs : 0;
  if (built > Math.max(configs, ...sources.map(newest))) continue;
  const result = spawnSync(process.execPath, [tsc, '-p', project, '--incremental', '--tsBuildInfoFile', info], {
    cwd: root,
    stdio: 'inherit',
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
// The entry sees the arguments it would if node ran it directly: [node, entry, ...its own].
const file = join(root, 'dist-sample/sample-app', `${entry}.js`);
process.argv.splice(1, 2, file);
await import(pathToFileURL(file).href);
