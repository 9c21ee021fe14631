// Hooks on an abort signal that many waits share. A pool's close signal is passed to every caller
// that waits for admission, and to the limiter with it; a listener for each would be quadratic:
// Node's EventTarget checks each new listener against every one it holds (measured: 8 of 20 s of
// CPU with 2,500 callers waiting for an adaptive limit). One listener per signal here, and a set
// of the waits themselves: adding and removing one is O(1), and a wait that is an object of its
// own needs no closure to be told, nor one to be unhooked (what thousands of waiters hold is what
// the young generation's collector copies).

/** A wait that an abort ends. */
export interface AbortHook {
  aborted(reason: unknown): void;
}

const hooks = new WeakMap<AbortSignal, Set<AbortHook>>();

/**
 * Tells `hook` once when `signal` aborts (never if it has already: check `aborted` first). Each
 * wait hooks an object of its own: the same one twice is told once. {@link unhookAbort} takes it off.
 */
export function hookAbort(signal: AbortSignal, hook: AbortHook): void {
  let waits = hooks.get(signal);
  if (waits === undefined) {
    const fresh = new Set<AbortHook>();
    waits = fresh;
    hooks.set(signal, fresh);
    signal.addEventListener(
      'abort',
      () => {
        hooks.delete(signal);
        for (const wait of fresh) wait.aborted(signal.reason);
        fresh.clear();
      },
      { once: true },
    );
  }
  waits.add(hook);
}

/** Takes `hook` off `signal`: it is not told of an abort after this. */
export function unhookAbort(signal: AbortSignal, hook: AbortHook): void {
  hooks.get(signal)?.delete(hook);
}
