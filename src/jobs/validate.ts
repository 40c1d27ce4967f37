import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import {
  BreakwaterError,
  POSITIVE_INTEGER,
  checkedJson,
  clockOption,
  finite,
  invalidOption,
  Log,
  loggerOption,
  nonEmptyString,
  type Clock,
  type NumberRule,
} from '../core/index.js';
import { ExponentialBackoff, type Backoff } from '../policy/index.js';
import { MAX_OWNER_LENGTH, type JobStore, type NewJob } from '../store/index.js';
import {
  JOBS_DEFAULTS,
  type DefineJobOptions,
  type EnqueueOptions,
  type JobHandler,
  type JobsOptions,
} from './types.js';

/** Largest value of the stores' 32-bit integer columns (priority, max_attempts). */
const INT32_MAX = 2_147_483_647;
/** Longest idempotency key accepted. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
/** Longest ordering key accepted. */
export const MAX_ORDERING_KEY_LENGTH = 255;

/** A whole number of ms > 0. */
const POSITIVE_MS: NumberRule = { min: 0, exclusiveMin: true, integer: true };

/** {@link JobsOptions} with every default applied. */
export interface ResolvedJobsOptions {
  store: JobStore;
  clock: Clock;
  owner: string;
  leaseMs: number;
  heartbeatMs: number;
  pollMs: number;
  /** Where run ends are logged: the `logger` option, else the process logger. */
  log: Log;
}

/**
 * Validates {@link JobsOptions} and fills in the defaults.
 * @throws RangeError naming the option (`createJobs: leaseMs must be ...`).
 */
export function resolveJobsOptions(options: JobsOptions): ResolvedJobsOptions {
  const owner = 'createJobs';
  if (typeof options !== 'object' || options === null) {
    throw invalidOption(owner, 'options', 'an object { store, ... }', options);
  }
  const store = options.store as Partial<JobStore> | undefined;
  if (typeof store !== 'object' || store === null || typeof store.claim !== 'function') {
    throw invalidOption(owner, 'store', 'a JobStore', store);
  }
  const clock = clockOption(owner, options.clock);
  const leaseMs = finite(owner, 'leaseMs', options.leaseMs ?? JOBS_DEFAULTS.leaseMs, POSITIVE_MS);
  const heartbeatMs = finite(owner, 'heartbeatMs', options.heartbeatMs ?? Math.floor(leaseMs / 3), {
    ...POSITIVE_MS,
    max: leaseMs - 1,
  });
  const pollMs = finite(owner, 'pollMs', options.pollMs ?? JOBS_DEFAULTS.pollMs, POSITIVE_MS);
  const name = nonEmptyString(owner, 'owner', options.owner ?? defaultOwner());
  const log = new Log(loggerOption(owner, 'logger', options.logger));
  return { store: options.store, clock, owner: name, leaseMs, heartbeatMs, pollMs, log };
}

function defaultOwner(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

/** A defined job type with its options resolved. */
export interface JobType {
  type: string;
  handler: JobHandler;
  concurrency: number;
  timeoutMs: number | undefined;
  maxAttempts: number;
  backoff: Backoff;
  /** Longest carried wait a retry waits out, ms (see {@link DefineJobOptions.maxRetryWaitMs}). */
  maxRetryWaitMs: number;
  /** Span names, made once: `enqueue <type>` and `job <type>`. */
  spanNames: { enqueue: string; run: string };
}

/**
 * Validates `defineJob`'s arguments (not whether the type is already defined).
 * @throws RangeError naming the option.
 */
export function resolveJobType(type: string, handler: JobHandler, options: DefineJobOptions = {}): JobType {
  const owner = 'defineJob';
  nonEmptyString(owner, 'type', type);
  if (typeof handler !== 'function') throw invalidOption(owner, 'handler', 'a function', handler);
  if (typeof options !== 'object' || options === null) {
    throw invalidOption(owner, 'options', 'an object or left out', options);
  }
  const backoff = options.backoff as Partial<Backoff> | undefined;
  if (backoff !== undefined && (typeof backoff !== 'object' || typeof backoff?.next !== 'function')) {
    throw invalidOption(owner, 'backoff', 'a Backoff with next(retry, previousMs)', backoff);
  }
  return {
    type,
    handler,
    concurrency: finite(
      owner,
      'concurrency',
      options.concurrency ?? JOBS_DEFAULTS.concurrency,
      POSITIVE_INTEGER,
    ),
    timeoutMs:
      options.timeoutMs === undefined
        ? undefined
        : finite(owner, 'timeoutMs', options.timeoutMs, POSITIVE_MS),
    maxAttempts: finite(owner, 'maxAttempts', options.maxAttempts ?? JOBS_DEFAULTS.maxAttempts, {
      ...POSITIVE_INTEGER,
      max: INT32_MAX,
    }),
    backoff: (backoff as Backoff | undefined) ?? new ExponentialBackoff(JOBS_DEFAULTS.backoff),
    maxRetryWaitMs: finite(owner, 'maxRetryWaitMs', options.maxRetryWaitMs ?? JOBS_DEFAULTS.maxRetryWaitMs, {
      min: 0,
      integer: true,
    }),
    spanNames: { enqueue: `enqueue ${type}`, run: `job ${type}` },
  };
}

/** The `invalid_payload` error of a bad enqueue: nothing is written. */
function badInput(message: string, field: string): BreakwaterError {
  return new BreakwaterError('invalid_payload', { message, details: { field } });
}

/**
 * Checks an enqueue and builds the store's {@link NewJob}. `jobType` is undefined when the type is not
 * defined in this process. `currentOwner` is the owner when `options.owner` is absent (the current
 * principal's id, or null).
 * @throws BreakwaterError `invalid_payload` with a message naming the problem and `details.field`.
 */
export function toNewJob(
  type: string,
  jobType: JobType | undefined,
  payload: unknown,
  options: EnqueueOptions | undefined,
  now: number,
  currentOwner: string | null = null,
): NewJob {
  if (jobType === undefined) {
    throw badInput(`Unknown job type ${JSON.stringify(type)}: define it with defineJob first.`, 'type');
  }
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw badInput('enqueue options must be an object.', 'options');
  }
  const { idempotencyKey, orderingKey, delayMs, priority, maxAttempts, timeoutMs } = options ?? {};
  const owner = options?.owner === undefined ? currentOwner : options.owner;
  try {
    checkedJson(payload);
  } catch (error) {
    const reason = error instanceof Error ? ` ${error.message}` : '';
    throw badInput(`The payload of a ${type} job must be JSON-serializable.${reason}`, 'payload');
  }
  if (
    idempotencyKey !== undefined &&
    (typeof idempotencyKey !== 'string' ||
      idempotencyKey.length === 0 ||
      idempotencyKey.length > MAX_IDEMPOTENCY_KEY_LENGTH)
  ) {
    throw badInput(
      `idempotencyKey must be a string of 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters.`,
      'idempotencyKey',
    );
  }
  if (
    orderingKey !== undefined &&
    (typeof orderingKey !== 'string' ||
      orderingKey.length === 0 ||
      orderingKey.length > MAX_ORDERING_KEY_LENGTH)
  ) {
    throw badInput(
      `orderingKey must be a string of 1 to ${MAX_ORDERING_KEY_LENGTH} characters.`,
      'orderingKey',
    );
  }
  if (delayMs !== undefined && !(typeof delayMs === 'number' && Number.isFinite(delayMs) && delayMs >= 0)) {
    throw badInput(`delayMs must be a finite number >= 0, got ${String(delayMs)}.`, 'delayMs');
  }
  if (
    priority !== undefined &&
    !(Number.isInteger(priority) && priority >= -INT32_MAX - 1 && priority <= INT32_MAX)
  ) {
    throw badInput(`priority must be a 32-bit integer, got ${String(priority)}.`, 'priority');
  }
  if (
    maxAttempts !== undefined &&
    !(Number.isInteger(maxAttempts) && maxAttempts >= 1 && maxAttempts <= INT32_MAX)
  ) {
    throw badInput(`maxAttempts must be an integer >= 1, got ${String(maxAttempts)}.`, 'maxAttempts');
  }
  if (timeoutMs !== undefined && !(Number.isInteger(timeoutMs) && timeoutMs > 0)) {
    throw badInput(`timeoutMs must be an integer > 0, got ${String(timeoutMs)}.`, 'timeoutMs');
  }
  if (
    owner !== null &&
    !(
      typeof owner === 'string' &&
      owner.length > 0 &&
      owner.length <= MAX_OWNER_LENGTH &&
      !owner.includes('\0')
    )
  ) {
    throw badInput(
      `owner must be null or a principal id of 1 to ${MAX_OWNER_LENGTH} characters without NUL.`,
      'owner',
    );
  }
  const job: NewJob = {
    type,
    payload,
    runAt: now + Math.ceil(delayMs ?? 0),
    priority: priority ?? 0,
    maxAttempts: maxAttempts ?? jobType.maxAttempts,
  };
  if (idempotencyKey !== undefined) job.idempotencyKey = idempotencyKey;
  if (orderingKey !== undefined) job.orderingKey = orderingKey;
  if (timeoutMs !== undefined) job.timeoutMs = timeoutMs;
  if (owner !== null) job.owner = owner;
  return job;
}
