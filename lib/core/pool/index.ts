export { ConnectionPool } from './connection-pool.js';
export { kRaw, Lease } from './lease.js';
export {
  findScope,
  kConnector,
  kEnterUnit,
  kLeaseNow,
  kUseOn,
  type MethodBody,
  type MethodPool,
  type ScopeUnit,
  useOn,
} from './pool-use.js';
