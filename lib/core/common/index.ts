export { type AbortHook, hookAbort, unhookAbort } from './abort-hooks.js';
export { backoffMs, type Clock, EarliestTimer, ProcessHold, systemClock, type TimerHandle, Timers } from './clock.js';
export {
  brandError,
  CapacityExceededError,
  type CapacityReason,
  type ConfigSubject,
  ConnectionFailedError,
  ConnectionsExhaustedError,
  type ExhaustedReason,
  KeyLimitError,
  LeaseHeldTooLongError,
  LeaseEndedError,
  LeaseLostError,
  PoolClosedError,
  PoolConfigError,
  PoolContextError,
  PoolError,
  type PoolErrorCode,
  QueueFullError,
  ScopeTurnTimeoutError,
  SelfDeadlockError,
} from './errors.js';
export { consoleLogger, type PoolLogger, scrubbingLogger } from './logger.js';
export { isRefusal, type RefusalError, retryAfterOf } from './refusal.js';
export {
  closest,
  is,
  keysOf,
  optionError,
  OptionReader,
  type OptionScope,
  type Rule,
  shown,
  unknownKey,
  violation,
} from './option-rules.js';
export { messageOf, scrub, scrubbed, scrubbedCause } from './scrub.js';
export { TurnStamps } from './turn-stamps.js';
export { type EventDates, TurnClock, turnDates, TURN_READS } from './turn-clock.js';
