/**
 * Measurements that must run in a process of their own (no JIT feedback or promise hook left by
 * another variant): the bench's side spawns the module's script with its arguments and reads one
 * JSON value from its stdout; the script's side runs the measurement when it is the entry point.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Runs the script at `moduleUrl` (an `import.meta.url`) with `args` in a new Node process; its JSON answer. */
export function inFreshProcess<R>(moduleUrl: string, args: readonly string[]): Promise<R> {
  const script = fileURLToPath(moduleUrl);
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [script, ...args], { timeout: 300_000 }, (err, stdout) => {
      if (err !== null) reject(err);
      else resolve(JSON.parse(stdout) as R);
    });
  });
}

/** When the module at `moduleUrl` is the process's entry point: runs `measure` on its arguments and prints the result as JSON. */
export function answerWhenRun(moduleUrl: string, measure: (args: string[]) => Promise<unknown>): void {
  if (process.argv[1] !== fileURLToPath(moduleUrl)) return;
  measure(process.argv.slice(2)).then(
    (result) => process.stdout.write(JSON.stringify(result)),
    (err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
