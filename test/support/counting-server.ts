// A server on virtual time that counts the connections alive at it: what a pool group's budget
// must hold to, from the start of a create to the end of its close.
import type { Connector } from '../../lib/index.js';
import type { VirtualClock } from './virtual-clock.js';

export interface Conn {
  readonly id: number;
  users: number;
}

/** Connections alive at the server: from a create's resolution to the end of its close (both on `clock`). */
export function countingServer(clock: VirtualClock, createMs: number, closeMs = 0) {
  const state = { alive: 0, peak: 0, created: 0, closed: 0 };
  const connector = (): Connector<Conn> => ({
    clientLimit: 1,
    // Like a real driver, the connect goes on whatever the signal says; the pool must count it.
    create: () =>
      new Promise((resolve) =>
        clock.setTimeout(() => {
          state.alive++;
          state.created++;
          state.peak = Math.max(state.peak, state.alive);
          resolve({ id: state.created, users: 0 });
        }, createMs),
      ),
    close: () =>
      new Promise<void>((resolve) =>
        clock.setTimeout(() => {
          state.alive--;
          state.closed++;
          resolve();
        }, closeMs),
      ),
  });
  return { state, connector };
}
