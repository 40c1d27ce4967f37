/**
 * core/: the contracts every other folder builds on. Imports nothing of ours.
 *
 * Tracing (`trace.js`) is a face of its own, not re-exported here: it loads `@opentelemetry/api`, which the
 * package root (core and the policies, which make no spans) does without.
 */
export {
  BreakwaterError,
  ERROR_CODES,
  isBreakwaterError,
  isErrorCode,
  isRequestTimeout,
  requestNotReceived,
  sentenceFor,
  withRetryHint,
  humanDuration,
  type BreakwaterErrorOptions,
  type ErrorCode,
  type ErrorKind,
  type ErrorOutcome,
} from './errors.js';
export { PROBLEM_CONTENT_TYPE, toProblem, retryAfterHeader, type ProblemDetails } from './problem.js';
export {
  classify,
  parseRetryAfter,
  toBreakwaterError,
  type Classification,
  type ClassifyOptions,
} from './classify.js';
export { Deadline, deadlineExceeded } from './deadline.js';
export { FakeClock, clockOption, sleep, systemClock, type Clock, type TimerHandle } from './clock.js';
export { TimerQueue, type TimerEntry } from './timer-queue.js';
export { newId } from './ids.js';
export { DRAIN_LIMIT_BYTES } from './drain.js';
export { rejectSoon } from './promises.js';
export { canonicalJson, checkedJson, fingerprint } from './fingerprint.js';
export { MAX_JSON_DEPTH, checkJsonDepth, jsonDepthExceeds, tooDeep } from './json-depth.js';
export { refuseRepeated, repeatableParameters } from './query.js';
export {
  GRACE_END,
  LinkedAbort,
  REQUEST_SIGNAL,
  abortReason,
  hostGraceEnd,
  hostRequestSignal,
  neverAbortedSignal,
  type AtGraceEnd,
  type RequestSignalOf,
} from './signals.js';
export {
  NON_NEGATIVE,
  NumberSchema,
  OptionsError,
  POSITIVE,
  POSITIVE_INTEGER,
  Redacted,
  Schema,
  StringSchema,
  bool,
  defineOptions,
  o,
  finite,
  fraction,
  invalidOption,
  nonEmptyString,
  oneOf,
  optionalFn,
  optionalObject,
  type NumberRule,
  type OptionProblem,
  type Parsed,
  type Report,
  type ShapeOf,
} from './options.js';
export { EventSource, type Disposable, type Listener } from './events.js';
export { REDACTED, TOO_DEEP, isSecretKey, redact, redactText } from './redact.js';
export {
  Log,
  LogContext,
  errorFields,
  getLogger,
  loggerOption,
  setLogger,
  type ErrorLogFields,
  type LogFields,
  type LogLevel,
  type Logger,
} from './log.js';
export {
  PRINCIPALS,
  PrincipalContext,
  SCOPES,
  canAccess,
  hasScope,
  webhookPrincipal,
  type Principal,
  type PrincipalAiLimits,
  type PrincipalBudget,
  type PrincipalKind,
  type PrincipalRateRule,
  type Scope,
} from './principal.js';
export {
  INPUT_KEY_RULE,
  inputAnswerShapeProblem,
  isInputKey,
  type InputAnswer,
  type InputQuestion,
  type InputSchema,
} from './input.js';
