import type { MemberLoad } from '../../lib/groups/group-planner.js';

/** A pool group member's load for the planner: nothing held, nothing asked, unless said. */
export const load = (key: string, fields: Partial<Omit<MemberLoad, 'key'>> = {}): MemberLoad => ({
  key,
  connections: 0,
  inUse: 0,
  stealable: 0,
  waiting: 0,
  holdMs: 10,
  oldestMs: 0,
  ...fields,
});
