// What the other folders of lib use of this one: its public surface (public.ts), and what follows.
export * from './public.js';
export {
  backoffMs,
  brandError,
  closest,
  EarliestTimer,
  type EventDates,
  type AbortHook,
  hookAbort,
  is,
  keysOf,
  messageOf,
  optionError,
  OptionReader,
  type OptionScope,
  ProcessHold,
  type Rule,
  scrubbed,
  scrubbedCause,
  shown,
  Timers,
  turnDates,
  unhookAbort,
  unknownKey,
  violation,
} from './common/index.js';
export { type BudgetMember, type ConnectionBudget, kBudget, kMember, type MemberSide } from './contracts/index.js';
export { events, meterOf, meterRule, observeEach } from './observation/index.js';
export { checkedOnce, CONNECTIONS, resolveOptions } from './options/index.js';
export {
  findScope,
  kConnector,
  kEnterUnit,
  kLeaseNow,
  kRaw,
  kUseOn,
  type MethodBody,
  type MethodPool,
  type ScopeUnit,
  useOn,
} from './pool/index.js';
export {
  DRAIN_WINDOW_MS,
  DrainRate,
  LinkedQueue,
  type QueueNode,
  QueueWatch,
  type ResolvedWaiting,
  resolveWaiting,
  StandingQueue,
  Waiter,
  WaiterQueue,
} from './waiting/index.js';
