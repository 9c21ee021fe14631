import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// Jest's workers run without --expose-gc: the flag set now gives a new context its gc().
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** The heap in use once garbage is collected: what is still reachable, without the noise of when a GC last ran. */
export function liveHeap(): number {
  gc();
  gc(); // a second pass frees what the first one's finalizers let go
  return process.memoryUsage().heapUsed;
}
