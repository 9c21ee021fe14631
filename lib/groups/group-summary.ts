import { type MemberSide, messageOf, type PoolHealth } from '../core/index.js';
import type { Hunger } from './group-planner.js';
import type { PoolGroupMemberRow } from './group-stats.js';

/** What a summary reads of a member. */
export interface SummarizedMember {
  readonly key: string;
  readonly quota: number;
  readonly holdMs: number;
  readonly side: MemberSide;
  readonly pool: { health(): PoolHealth };
}

/** The members' figures in a summary, and the rows a page shows. */
export interface MemberSummary {
  readonly clients: number;
  readonly waiting: number;
  /** Ready connections of every member. */
  readonly ready: number;
  /** The last error of the most recently used member that has one, credentials hidden. */
  readonly lastError: string | undefined;
  /** Members below their share with callers waiting. */
  readonly hungry: number;
  /** Every member with callers fails to connect (and there is one). */
  readonly allFailing: boolean;
  readonly rows: PoolGroupMemberRow[];
}

/**
 * Sums `newestFirst` (the members, most recently used first) up in a few reads each, and makes
 * rows for at most `rows` of them: waiting first, then hungry, then busiest, then the idle ones;
 * ties keep the recency order. One numeric sort of the busy ones, so no keys are compared.
 */
export function summarizeMembers<M extends SummarizedMember>(
  newestFirst: readonly M[],
  hungerOf: (m: M, waiting?: number) => Hunger,
  rows: number,
): MemberSummary {
  let clients = 0;
  let waiting = 0;
  let ready = 0;
  let lastError: unknown;
  let hungry = 0;
  let calling = 0;
  let failing = 0;
  const busy: number[] = [];
  const scores = new Float64Array(newestFirst.length);
  for (let i = 0; i < newestFirst.length; i++) {
    const m = newestFirst[i]!;
    const w = m.side.waiting();
    const c = m.side.clientCount();
    clients += c;
    waiting += w;
    ready += m.side.readyCount();
    lastError ??= m.side.lastError;
    const isHungry = hungerOf(m, w) === 'hungry';
    if (isHungry && w > 0) hungry++;
    // The group fails when every member with callers does: once one does not, no more to look at.
    if (w + c > 0 && calling === failing) {
      calling++;
      if (m.pool.health() === 'failing') failing++;
    }
    if (w === 0 && c === 0 && !isHungry) continue;
    scores[i] = w * 2 ** 22 + (isHungry ? 2 ** 21 : 0) + Math.min(c, 2 ** 21 - 1);
    busy.push(i);
  }
  busy.sort((a, b) => scores[b]! - scores[a]! || a - b);
  const shown: PoolGroupMemberRow[] = [];
  const row = (m: M) =>
    shown.push({
      key: m.key,
      quota: m.quota,
      hunger: hungerOf(m),
      connections: m.side.connectionCount(),
      clients: m.side.clientCount(),
      waiting: m.side.waiting(),
      health: m.pool.health(),
      holdMs: m.holdMs,
    });
  for (let k = 0; k < busy.length && shown.length < rows; k++) row(newestFirst[busy[k]!]!);
  for (let i = 0; i < newestFirst.length && shown.length < rows; i++) if (scores[i] === 0) row(newestFirst[i]!);
  return {
    clients,
    waiting,
    ready,
    lastError: lastError === undefined ? undefined : messageOf(lastError),
    hungry,
    allFailing: calling > 0 && failing === calling,
    rows: shown,
  };
}
