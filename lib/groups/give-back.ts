// Giving a burst's connections back (issue 24). A member that burst to many connections and went
// quiet keeps what it needed lately (the group's smoothed need, rounded up) and one more; every
// idle connection beyond that goes back to the server once it has been idle for the member's
// give-back delay. The delay starts short (the group's base: the minimum hold, three rebalance
// intervals), so a one-off burst is given back within about a second. A member that begins a
// connection soon after it gave some back gave too early: its delay grows to twice the gap it
// just saw, so bursts that return in a rhythm cost one round of reconnects, then keep their
// connections. A give-back that nothing regrets within REGRET_WINDOW_MS halves the delay again,
// back towards the base.
import type { MemberSide } from '../core/index.js';

/** A connection begun this soon after a give-back shows the give-back was early. */
const REGRET_WINDOW_MS = 10_000;

/** One member's give-back delay, as it learns its rhythm. */
export class GiveBack {
  /** The delay this member learned, ms; 0 before it has learned anything (the base applies). */
  #learnedMs = 0;
  /** When it last gave a connection back, until that is judged. */
  #gaveAt: number | undefined;
  /** Connections it gave back since it was made. */
  given = 0;

  /** The delay in force: what it learned, and never below the group's base. */
  delayMs(baseMs: number): number {
    return Math.max(baseMs, this.#learnedMs);
  }

  /** The group's tick: gives back the idle connections the member need not keep; how many. */
  tick(now: number, side: MemberSide, recentNeed: number, baseMs: number): number {
    if (this.#gaveAt !== undefined && now - this.#gaveAt > REGRET_WINDOW_MS) {
      // Nothing came back for them: it was right to give them, so give sooner next time.
      this.#gaveAt = undefined;
      this.#learnedMs = this.#learnedMs / 2 <= baseMs ? 0 : this.#learnedMs / 2;
    }
    if (side.waiting() > 0) return 0;
    const given = side.shrinkTo(Math.ceil(recentNeed) + 1, this.delayMs(baseMs), 'after a burst, the group');
    if (given > 0) {
      this.#gaveAt = now;
      this.given += given;
    }
    return given;
  }

  /** Whether it gave connections back lately and has not learned from it yet. */
  get judging(): boolean {
    return this.#gaveAt !== undefined;
  }

  /** The member began a connection: if it gave some back lately, it gave them too early. */
  began(now: number, baseMs: number, maxMs: number): void {
    if (this.#gaveAt === undefined) return;
    // Its connections had been idle for the delay, then gone for `since`: the gap its load left.
    const gap = this.delayMs(baseMs) + (now - this.#gaveAt);
    this.#learnedMs = Math.min(maxMs, 2 * gap);
    this.#gaveAt = undefined;
  }
}
