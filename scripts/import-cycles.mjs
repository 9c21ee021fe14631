// Import cycles among the library's files (type-only imports included: a circle of types is still
// a circle a reader must hold in mind). `npm run lint` runs it; a cycle fails the lint.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Every `.ts` file under `dir`, and the files of the same tree each one imports (relative imports only). */
export function importGraph(dir) {
  const files = readdirSync(dir, { recursive: true }).filter((f) => f.endsWith('.ts')).map((f) => normalize(join(dir, f)));
  const graph = new Map();
  for (const file of files) {
    const deps = new Set();
    for (const m of readFileSync(file, 'utf8').matchAll(/(?:import|export)\s[^;]*?from\s+'(\.[^']+)'/gs)) {
      const target = normalize(join(dirname(file), m[1])).replace(/\.js$/, '.ts');
      if (existsSync(target)) deps.add(target);
    }
    graph.set(file, deps);
  }
  return graph;
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
  for (const cycle of cycles) console.error(`import cycle: ${cycle.map((f) => relative(root, f)).join(' -> ')}: move the types they share into one file, or invert a dependency`);
  process.exitCode = cycles.length > 0 ? 1 : 0;
}
