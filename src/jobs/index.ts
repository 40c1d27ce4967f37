/**
 * jobs/: the queue and the worker over a job store (docs/jobs.md). Imports core, policy and store only.
 */
export { createJobs } from './jobs.js';
export {
  JOBS_DEFAULTS,
  type DefineJobOptions,
  type EnqueueOptions,
  type JobContext,
  type JobHandler,
  type JobRunEndedEvent,
  type JobRunOutcome,
  type JobStartedEvent,
  type Jobs,
  type JobsOptions,
  type StopOptions,
  type SubscribeOptions,
} from './types.js';
export { PROGRESS_MIN_DELTA, type ProgressPayload } from './progress.js';
export {
  INPUT_BOUNDS,
  type InputAnswer,
  type InputQuestion,
  type RequestInputOptions,
  type RequestInputsQuestion,
} from './input.js';
export { INPUT_SCHEMA_BOUNDS } from './input-schema.js';
export { respondToJob, type RespondOptions } from './respond.js';
export { MAX_IDEMPOTENCY_KEY_LENGTH, MAX_ORDERING_KEY_LENGTH } from './validate.js';
export { jobPaths } from './paths.js';
export { callerPrincipal, listOwner, jobVisibleTo } from './access.js';
export { jobErrorMessage, retryAfterMsOf } from './error-view.js';
