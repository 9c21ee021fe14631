export {
  type AcquireOptions,
  checkAcquireOptions,
  checkCloseOptions,
  checkedOnce,
  checkUseOptions,
  type CloseOptions,
  isCheckedOnce,
  type RetryOptions,
  type UseOptions,
} from './call-options.js';
export { CONNECTIONS } from './connector-rules.js';
export { type PoolOptions, type ResolvedOptions, resolveOptions, type SelectionStrategy } from './pool-options.js';
