/**
 * Breakwater's public face: `import { ... } from 'breakwater'`. Later issues add stores, jobs, operations,
 * webhooks, the upstream client, the AI gateway and the MCP server here. Plumbing that core shares with the
 * other folders (timer queues, promise helpers, option checks) stays out of it.
 */
export {
  BreakwaterError,
  ERROR_CODES,
  isBreakwaterError,
  isErrorCode,
  sentenceFor,
  type BreakwaterErrorOptions,
  type ErrorCode,
  type ErrorKind,
  type ErrorOutcome,
  PROBLEM_CONTENT_TYPE,
  toProblem,
  retryAfterHeader,
  type ProblemDetails,
  classify,
  parseRetryAfter,
  toBreakwaterError,
  type Classification,
  type ClassifyOptions,
  Deadline,
  deadlineExceeded,
  FakeClock,
  sleep,
  systemClock,
  type Clock,
  type TimerHandle,
  newId,
  canonicalJson,
  fingerprint,
  LinkedAbort,
  type Disposable,
  type Listener,
} from './core/index.js';
export * from './policy/index.js';
