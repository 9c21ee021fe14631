import { PoolConfigError } from '../../core/index.js';
import type { ResolvedLimits } from '../local/index.js';

/**
 * The limits of every started Redis limiter in this process, by Redis and namespace: two limiters
 * that would share a namespace with different limits would each enforce their own on one budget.
 */
const namespaces = new Map<string, { name: string; global: number; perKey: number; users: number }>();

/** A per-key limit as the error names it (NaN: a function of the key). */
const shownPerKey = (perKey: number): string => (Number.isNaN(perKey) ? 'by key' : String(perKey));

/**
 * Claims `namespace` on the Redis at `where` for these limits, or refuses (`PoolConfigError`) when
 * a limiter of other limits holds it. Returns the function that gives the claim back.
 */
export function claimNamespace(where: string, namespace: string, limits: ResolvedLimits): () => void {
  const id = `${where}|${namespace}`;
  const { name, global, perKey } = limits;
  const other = namespaces.get(id);
  if (other !== undefined && (other.global !== global || !Object.is(other.perKey, perKey))) {
    throw new PoolConfigError(
      name,
      'limits.redis.namespace',
      `"${namespace}" is already used on this Redis by limiter "${other.name}" with other limits ` +
        `(global ${other.global}, perKey ${shownPerKey(other.perKey)}; here ${global}, ${shownPerKey(perKey)}): they would share one budget. Give each its own namespace, or the same limits`,
      'limiter',
    );
  }
  if (other !== undefined) other.users++;
  else namespaces.set(id, { name, global, perKey, users: 1 });
  let claimed = true;
  return () => {
    if (!claimed) return;
    claimed = false;
    const entry = namespaces.get(id);
    if (entry !== undefined && --entry.users === 0) namespaces.delete(id);
  };
}
