// Two rules on the library's imports, run by `npm run lint`:
// - no import cycles (type-only imports included: a circle of types is still a circle a reader
//   must hold in mind);
// - a folder is entered through its index.ts: an import of a file in another folder names the
//   index.ts of the outermost folder it enters (lib/limits/redis/x.ts imports lib/core/index.ts,
//   never lib/core/common/clock.ts). A layer's public.ts (what the package shows) is imported only
//   by lib/index.ts, the package's root entry.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, normalize, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Every `.ts` file under `dir`, and the files of the same tree each one imports (relative imports only). */
export function importGraph(dir) {
  const graph = new Map();
  for (const [file, targets] of importsUnder(dir)) graph.set(file, new Set(targets.filter((t) => existsSync(t))));
  return graph;
}

/** Every `.ts` file under `dir`, with the files its relative imports and re-exports name. */
function importsUnder(dir) {
  const files = readdirSync(dir, { recursive: true })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => normalize(join(dir, f)));
  return new Map(
    files.map((file) => [
      file,
      [...readFileSync(file, 'utf8').matchAll(/(?:import|export)\s[^;]*?from\s+'(\.[^']+)'/gs)].map((m) =>
        normalize(join(dirname(file), m[1])).replace(/\.js$/, '.ts'),
      ),
    ]),
  );
}

/** The outermost folder holding `target` that does not hold `file` (the folder an import enters), within `root`. */
function entered(root, file, target) {
  let folder = dirname(target);
  while (dirname(folder) !== root && dirname(folder).startsWith(root) && !file.startsWith(dirname(folder) + sep))
    folder = dirname(folder);
  return folder;
}

/** Imports under `dir` that enter a folder other than through its index.ts, as text; `dir`/index.ts may name a layer's public.ts. */
export function bypassesOf(dir) {
  const root = normalize(dir);
  const found = [];
  for (const [file, targets] of importsUnder(root)) {
    for (const target of targets) {
      if (dirname(target) === dirname(file)) continue;
      const face = join(entered(root, file, target), 'index.ts');
      const rootEntry =
        file === join(root, 'index.ts') && basename(target) === 'public.ts' && dirname(dirname(target)) === root;
      if (target !== face && !rootEntry)
        found.push(
          `${relative(root, file)} imports ${relative(root, target)}: import ${relative(root, face)} instead (export the name there)`,
        );
    }
  }
  return found;
}

/** The cycles of `graph` (Map of node to its edges): each strongly connected group of two or more, sorted. */
export function cyclesOf(graph) {
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const cycles = [];
  let next = 0;
  const visit = (v) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
    }
    if (low.get(v) !== index.get(v)) return;
    const group = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      group.push(w);
    } while (w !== v);
    if (group.length > 1 || graph.get(v)?.has(v)) cycles.push(group.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const cycles = cyclesOf(importGraph(join(root, 'lib')));
  for (const cycle of cycles)
    console.error(
      `import cycle: ${cycle.map((f) => relative(root, f)).join(' -> ')}: move the types they share into one file, or invert a dependency`,
    );
  const bypasses = bypassesOf(join(root, 'lib'));
  for (const bypass of bypasses) console.error(`import around a folder's index: lib/${bypass}`);
  process.exitCode = cycles.length + bypasses.length > 0 ? 1 : 0;
}
