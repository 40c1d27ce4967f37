import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import {
  BreakwaterError,
  OptionsError,
  checkedJson,
  defineOptions,
  Log,
  o,
  type Clock,
  type Logger,
} from '../core/index.js';
import { ExponentialBackoff, type Backoff } from '../policy/index.js';
import { MAX_OWNER_LENGTH, type JobStore, type NewJob } from '../store/index.js';
import {
  JOBS_DEFAULTS,
  type DefineJobOptions,
  type EnqueueOptions,
  type JobHandler,
  type JobsOptions,
  type StopOptions,
} from './types.js';
import { INPUT_BOUNDS } from './input.js';

/** Largest value of the stores' 32-bit integer columns (priority, max_attempts). */
const INT32_MAX = 2_147_483_647;
/** Longest idempotency key accepted. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
/** Longest ordering key accepted. */
export const MAX_ORDERING_KEY_LENGTH = 255;

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
 * Checks {@link JobsOptions} and applies {@link JOBS_DEFAULTS}; `heartbeatMs` (default `leaseMs / 3` rounded
 * down) and `owner` (default made per runtime) are resolved by {@link resolveJobsOptions}.
 */
const parseJobsOptions = defineOptions<JobsOptions>()(
  'createJobs',
  {
    store: o.methods<JobStore>('a JobStore', 'claim'),
    clock: o.clock(),
    owner: o.string().min(1).optional(),
    leaseMs: o.number().int().positive().default(JOBS_DEFAULTS.leaseMs),
    heartbeatMs: o.number().int().positive().optional(),
    pollMs: o.number().int().positive().default(JOBS_DEFAULTS.pollMs),
    logger: o
      .methods<Logger>('a pino-compatible logger with info, warn and error methods', 'info', 'warn', 'error')
      .optional(),
  },
  (p, report) => {
    const { leaseMs, heartbeatMs } = p;
    if (!(Number.isInteger(leaseMs) && leaseMs > 0)) return;
    if (heartbeatMs === undefined) {
      // The default heartbeat, a third of the lease, must be a whole ms > 0.
      if (leaseMs < 3) report('leaseMs', 'an integer >= 3 when heartbeatMs is left out', leaseMs);
    } else if (heartbeatMs >= leaseMs) {
      report('heartbeatMs', `an integer in (0, ${leaseMs - 1}]`, heartbeatMs);
    }
  },
);

/**
 * Validates {@link JobsOptions} and fills in the defaults.
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `createJobs`) naming every bad option.
 */
export function resolveJobsOptions(options: JobsOptions): ResolvedJobsOptions {
  const p = parseJobsOptions(options);
  return {
    store: p.store,
    clock: p.clock,
    owner: p.owner ?? defaultOwner(),
    leaseMs: p.leaseMs,
    heartbeatMs: p.heartbeatMs ?? Math.floor(p.leaseMs / 3),
    pollMs: p.pollMs,
    log: new Log(p.logger),
  };
}

function defaultOwner(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

/** Checks {@link StopOptions} and applies `JOBS_DEFAULTS.graceMs`. */
export const parseStopOptions = defineOptions<StopOptions>()('stop', {
  graceMs: o.number().min(0).default(JOBS_DEFAULTS.graceMs),
});

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
  /** Most questions one job may ask (see {@link DefineJobOptions.maxInputRounds}). */
  maxInputRounds: number;
  /** Span names, made once: `enqueue <type>` and `job <type>`. */
  spanNames: { enqueue: string; run: string };
}

/** `defineJob`'s arguments as one object, so that a bad type, handler and options are reported at once. */
interface DefineJobArguments extends DefineJobOptions {
  type: string;
  handler: JobHandler;
}

/** Checks `defineJob`'s arguments and applies {@link JOBS_DEFAULTS} (but the default backoff). */
const parseJobType = defineOptions<DefineJobArguments>()('defineJob', {
  type: o.string().min(1),
  handler: o.fn<JobHandler>(),
  concurrency: o.number().int().min(1).default(JOBS_DEFAULTS.concurrency),
  timeoutMs: o.number().int().positive().optional(),
  maxAttempts: o.number().int().min(1).max(INT32_MAX).default(JOBS_DEFAULTS.maxAttempts),
  backoff: o.methods<Backoff>('a Backoff with next(retry, previousMs)', 'next').optional(),
  maxRetryWaitMs: o.number().int().min(0).default(JOBS_DEFAULTS.maxRetryWaitMs),
  maxInputRounds: o.number().int().min(1).max(100).default(INPUT_BOUNDS.maxRounds),
});

/**
 * Validates `defineJob`'s arguments (not whether the type is already defined).
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `defineJob`) naming every bad argument and
 *   option; only `options` when it is not an object.
 */
export function resolveJobType(type: string, handler: JobHandler, options: DefineJobOptions = {}): JobType {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new OptionsError('defineJob', [
      { option: 'options', rule: 'an object or left out', value: options },
    ]);
  }
  const p = parseJobType({ ...options, type, handler });
  return {
    type: p.type,
    handler: p.handler,
    concurrency: p.concurrency,
    timeoutMs: p.timeoutMs,
    maxAttempts: p.maxAttempts,
    backoff: p.backoff ?? new ExponentialBackoff(JOBS_DEFAULTS.backoff),
    maxRetryWaitMs: p.maxRetryWaitMs,
    maxInputRounds: p.maxInputRounds,
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
