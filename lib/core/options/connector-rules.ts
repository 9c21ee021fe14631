import { is, optionError, PoolConfigError, type Rule, shown, violation } from '../common/index.js';

/** Connections one process may hold: past it (the ports of one host run out near 64 000) a value means "unbounded", which a pool must not be. */
export const MAX_CONNECTIONS = 100_000;
export const CONNECTIONS = is.count(
  1,
  MAX_CONNECTIONS,
  'a pool of more connections than one process can open is no bound',
);
/** Callers of one connection: the pool keeps a slot per client count, so the bound keeps its index small. */
export const USES: Rule = {
  says: 'a whole number of 1 or more, or Infinity (no limit)',
  ok: (v) => v === Infinity || is.whole(1).ok(v),
};
export const CLIENT_LIMIT = is.count(
  1,
  1_000_000,
  'callers one connection serves at once; a slot is kept for each count',
);

const LENDING: Rule = {
  says: 'true, false, or { returnsPromise(method) } (which methods answer with a promise)',
  ok: (v) =>
    typeof v === 'boolean' ||
    (typeof v === 'object' &&
      v !== null &&
      ['undefined', 'function'].includes(typeof (v as { returnsPromise?: unknown }).returnsPromise)),
};

const CONNECTOR_METHODS = ['ready', 'close', 'validate', 'reset', 'isFatal'] as const;

/** Members of other pools' factories, and the member of a connector that does their work. */
const PEER_NAMES = [['destroy', 'close']] as const;

/** Checks that `connector` has a `create` function and that its other members, if set, are functions. */
export function validateConnector(pool: string, connector: unknown): void {
  if (typeof connector !== 'object' || connector === null) {
    throw new PoolConfigError(pool, 'connector', `must be an object with a create() method, got ${shown(connector)}`);
  }
  const c = connector as Record<string, unknown>;
  const scope = { subject: 'pool', name: pool, path: 'connector.' } as const;
  if (c.create === undefined && c.connector !== undefined) {
    // new ConnectionPool({ name, connector }): one object where the constructor takes two.
    throw new PoolConfigError(
      pool,
      'connector',
      'must be the first argument, and the options the second: new ConnectionPool(connector, { name, maxSize }); the first argument given has a "connector" key, as if it were the options',
    );
  }
  if (c.create === undefined) throw optionError(scope, 'create', 'must be a function');
  for (const method of ['create', ...CONNECTOR_METHODS]) {
    const invalid = violation(scope, method, c[method], is.function);
    if (invalid !== undefined) throw invalid;
  }
  // What other pools call their members: a connector written for them would never see its connections closed.
  for (const [theirs, ours] of PEER_NAMES) {
    if (typeof c[theirs] === 'function' && c[ours] === undefined)
      throw optionError(
        scope,
        theirs,
        `is generic-pool's and tarn's name: this pool closes a connection with connector.${ours}(conn). Rename it to ${ours}`,
      );
  }
  const badLimit = violation(scope, 'clientLimit', c.clientLimit, CLIENT_LIMIT);
  if (badLimit !== undefined) throw badLimit;
  const badLending = violation(scope, 'lendsHandles', c.lendsHandles, LENDING);
  if (badLending !== undefined) throw badLending;
}
