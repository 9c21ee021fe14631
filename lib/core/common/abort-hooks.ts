// Hooks on an abort signal that many waits share. A pool's close signal is passed to every caller
// that waits for admission, and to the limiter with it; a listener for each would be quadratic:
// Node's EventTarget checks each new listener against every one it holds (measured: 8 of 20 s of
// CPU with 2,500 callers waiting for an adaptive limit). One listener per signal here, and a set
// of the waits' callbacks: adding and removing one is O(1).

const hooks = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Calls `onAbort` once when `signal` aborts (never if it has already: check `aborted` first).
 * `onAbort` must be this wait's own function. Returns what unhooks it.
 */
export function hookAbort(signal: AbortSignal, onAbort: () => void): () => void {
  let waits = hooks.get(signal);
  if (waits === undefined) {
    const fresh = new Set<() => void>();
    waits = fresh;
    hooks.set(signal, fresh);
    signal.addEventListener(
      'abort',
      () => {
        hooks.delete(signal);
        for (const call of fresh) call();
        fresh.clear();
      },
      { once: true },
    );
  }
  const set = waits;
  set.add(onAbort);
  return () => void set.delete(onAbort);
}
