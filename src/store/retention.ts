import { OptionsError, Schema, defineOptions, o, type Clock, type OptionProblem } from '../core/index.js';
import { STREAM_EVENT_RETENTION_MS } from './stream-events.js';
import { prunedTables, vacuumMode, type VacuumMode } from './vacuum.js';

/**
 * The retention contract (docs/architecture.md#retention): what the store forgets, and when. A
 * store keeps every job, delivery, stream message, idempotency record and operation it is given; this facet
 * (`store.retention`) removes the finished ones once they are older than their retention, in small batches,
 * and measures the store's size. The audit log is never pruned (it is only verified: `verifyAudit`).
 * Implemented by the SQLite and PostgreSQL stores; one contract suite (`retention-contract.ts`) runs on both.
 *
 * Ages are measured on the store's clock (or the `now` given): a row is removed once its age is strictly
 * greater than its retention, and kept at exactly its retention.
 */

const DAY_MS = 24 * 60 * 60 * 1000;

/** What {@link RetentionStore.prune} removes, in the order it removes them; the keys of every count. */
export const PRUNE_KINDS = [
  'jobs',
  'jobEvents',
  'webhookInbox',
  'streamEvents',
  'idempotency',
  'operations',
] as const;
export type PruneKind = (typeof PRUNE_KINDS)[number];

/** What {@link RetentionStore.size} counts: every prunable kind, and the audit log (never pruned). */
export const SIZE_KINDS = [...PRUNE_KINDS, 'audit'] as const;
export type SizeKind = (typeof SIZE_KINDS)[number];

/** The table each {@link SizeKind} counts, by kind (the same names on both backends; PostgreSQL's in the store's schema). */
export const SIZE_TABLES: Readonly<Record<SizeKind, string>> = {
  jobs: 'jobs',
  jobEvents: 'job_events',
  webhookInbox: 'webhook_inbox',
  streamEvents: 'stream_events',
  idempotency: 'idempotency_records',
  operations: 'operations',
  audit: 'audit_log',
};

/**
 * How long finished state is kept, in whole ms after it finished (`Infinity`: never removed). Idempotency records
 * have no entry: they are removed at their own expiry (`expiresAt`, set from the `ttlMs` of whoever made
 * them: 24 h for inbound `Idempotency-Key`s by default), since an expired record already reads as absent.
 */
export interface RetentionPolicy {
  /**
   * Completed and canceled jobs, with their events, after `finishedAt` (default 7 days): long enough to read a
   * result, follow a task's `tasks/result` or a job's SSE stream late, and look into last week's runs.
   */
  jobsMs: number;
  /**
   * Failed jobs (the dead letter), with their events, after `finishedAt` (default 30 days): longer than a
   * success, because a person has to see, understand and maybe retry them, and a retry by hand needs the job.
   */
  deadLettersMs: number;
  /**
   * A webhook delivery (its inbox row, which is also the deduplication of its event id), after its job
   * finished (default 7 days: longer than senders retry, Stripe up to 3 days, so a late redelivery is still
   * recognized as a duplicate). A delivery and its current job leave together, once both retentions passed:
   * a dead-lettered delivery stays as long as its job, so it can still be replayed.
   */
  webhookInboxMs: number;
  /**
   * Messages of resumable streams (SSE replay with `Last-Event-ID`), after they were appended (default
   * {@link STREAM_EVENT_RETENTION_MS}, 1 hour): enough to ride out a dropped connection; a client that comes
   * back later starts a new stream. They hold whole tool results, so they are the fastest-growing kind.
   */
  streamEventsMs: number;
  /**
   * Settled operations (`succeeded`, `failed`) after `settledAt` (default 30 days, as dead letters: an
   * operation is the evidence of a side effect). Unsettled ones (`pending`, `in_flight`, `unknown`,
   * `needs_attention`) are never removed.
   */
  operationsMs: number;
}

/** Defaults of {@link RetentionPolicy} (the table in docs/operations-guide.md, "Retention"). */
export const RETENTION_DEFAULTS: Readonly<RetentionPolicy> = {
  jobsMs: 7 * DAY_MS,
  deadLettersMs: 30 * DAY_MS,
  webhookInboxMs: 7 * DAY_MS,
  streamEventsMs: STREAM_EVENT_RETENTION_MS,
  operationsMs: 30 * DAY_MS,
};

/** Default and bounds of {@link PruneOptions.batchSize}. */
export const PRUNE_BATCH = { default: 500, min: 1, max: 10_000 } as const;

/** Options of {@link RetentionStore.prune}; checked before anything is read. */
export interface PruneOptions {
  /** The time ages are measured at, ms since the epoch (default the store's clock). */
  now?: number;
  /** Count what would be removed and remove nothing (default false). */
  dryRun?: boolean;
  /**
   * Most rows of one kind removed per transaction (default {@link PRUNE_BATCH}: 500, 1..10 000). A job counts
   * one with its events and its delivery. Each batch is its own short transaction, and the event loop gets a
   * turn between batches, so requests and workers are never held up by more than one batch.
   */
  batchSize?: number;
  /** Retentions differing from {@link RETENTION_DEFAULTS}. */
  retention?: Partial<RetentionPolicy>;
  /** Stops between two batches when aborted; the report then says `complete: false`. */
  signal?: AbortSignal;
}

/** What {@link RetentionStore.prune} did (or, with `dryRun`, would do). */
export interface PruneReport {
  dryRun: boolean;
  /** The time ages were measured at. */
  now: number;
  /** Rows removed (or that would be) per kind. */
  removed: Record<PruneKind, number>;
  /**
   * Transactions that removed rows, per kind walked: a job's events and delivery leave in its job's batch,
   * so they have no count of their own. 0 for a dry run.
   */
  batches: Record<BatchedKind, number>;
  /** False when `signal` stopped it before every kind was done. */
  complete: boolean;
}

/** The kinds a prune walks batch by batch (events and deliveries go with their job). */
export type BatchedKind = Exclude<PruneKind, 'jobEvents' | 'webhookInbox'>;

/** The store's size, as {@link RetentionStore.size} measured it. */
export interface StoreSize {
  /** When it was measured (the store's clock). */
  measuredAt: number;
  /** Rows per kind, counted exactly. */
  rows: Record<SizeKind, number>;
  /**
   * Bytes on disk: SQLite, the database file and its write-ahead log (a file never shrinks: pages freed by a
   * prune are reused by later writes); PostgreSQL, `pg_total_relation_size` (tables, indexes, TOAST) summed
   * over the store's tables. 0 for an in-memory SQLite store's log.
   */
  bytes: number;
}

/** `store.retention`. After the store's `close()` both methods reject with an Error. */
export interface RetentionStore {
  /**
   * Removes what is older than its retention ({@link RetentionPolicy}), kind by kind in the order of
   * {@link PRUNE_KINDS}, oldest first, in batches of `batchSize` along an index (never a scan of a table).
   * Never removes a job that is `pending` or `in_progress` or any of its events, a delivery whose job is
   * unfinished, an unsettled operation, or anything of the audit log. Rows another transaction holds are
   * skipped (PostgreSQL: `SKIP LOCKED`) and left for the next prune.
   * @throws OptionsError (`RangeError`, `invalid_options`, owner `retention.prune`) naming every bad option
   *   (nothing read); the backend's error when a batch fails (the batches before it stay committed).
   */
  prune(options?: PruneOptions): Promise<PruneReport>;

  /**
   * Counts the rows of every kind and the bytes on disk. Exact counts cost a pass over each table's smallest
   * index: measure it now and then (the gateway does after each prune), not on every scrape.
   */
  size(): Promise<StoreSize>;

  /**
   * Makes the space of the rows a prune removed reusable where the store must do it itself (see
   * {@link VacuumMode}; `mode` default `auto`): on PostgreSQL a `VACUUM (SKIP_LOCKED)` of each table that
   * `removed` (a {@link PruneReport}'s counts) says lost rows and that the mode selects, one at a time; on
   * SQLite nothing. Resolves with the tables vacuumed, in order.
   * @throws RangeError naming `vacuum` for a mode that is not one of `auto`, `always`, `never`; the backend's
   *   error when a `VACUUM` fails (the tables before it stay vacuumed).
   */
  vacuum(removed: Readonly<Record<PruneKind, number>>, mode?: VacuumMode): Promise<string[]>;
}

/** The cutoffs of one prune: a row older than its cutoff (strictly before it) goes. */
export interface PruneCutoffs {
  now: number;
  /** Per finished job status. {@link NEVER} for a retention of `Infinity`, here and below. */
  jobs: Record<FinishedStatus, number>;
  inbox: number;
  streamEvents: number;
  operations: number;
}

/** The job statuses a prune walks, each with its own retention. */
export type FinishedStatus = 'completed' | 'canceled' | 'failed';
export const FINISHED_STATUSES: readonly FinishedStatus[] = ['completed', 'canceled', 'failed'];

/** What one batch of jobs removed: the jobs, their events and deliveries, and where the walk is. */
export interface JobsBatch {
  jobs: number;
  jobEvents: number;
  webhookInbox: number;
  /** The largest `finishedAt` among the jobs removed (the next batch starts there), or null when none. */
  lastFinishedAt: number | null;
}

/**
 * One backend's statements: each `…Batch` is one transaction removing at most `limit` rows, oldest first,
 * and each `count…` counts what the batches would remove. Internal to `store/`.
 */
export interface RetentionBackend {
  /**
   * Jobs of `status` finished before `cutoff` and at or after `from` (the walk's position), with their events;
   * a job a delivery points at only when it also finished before `inboxCutoff`, together with that delivery.
   */
  jobsBatch(
    status: FinishedStatus,
    cutoff: number,
    inboxCutoff: number,
    from: number,
    limit: number,
  ): Promise<JobsBatch>;
  countJobs(
    status: FinishedStatus,
    cutoff: number,
    inboxCutoff: number,
  ): Promise<Omit<JobsBatch, 'lastFinishedAt'>>;
  /** Stream events appended before `cutoff`; once none are left, the streams emptied by them, in batches too. */
  streamEventsBatch(cutoff: number, limit: number): Promise<number>;
  emptyStreamsBatch(cutoff: number, limit: number): Promise<number>;
  countStreamEvents(cutoff: number): Promise<number>;
  /** Idempotency records expired at `now` (`expiresAt <= now`). */
  idempotencyBatch(now: number, limit: number): Promise<number>;
  countIdempotency(now: number): Promise<number>;
  /** Settled operations settled before `cutoff`. */
  operationsBatch(cutoff: number, limit: number): Promise<number>;
  countOperations(cutoff: number): Promise<number>;
  size(): Promise<StoreSize>;
  /**
   * Vacuums those of `tables` that `mode` selects (see {@link VacuumMode}); resolves with them. Absent: the
   * backend reuses freed space by itself (SQLite).
   */
  vacuum?(tables: readonly string[], mode: Exclude<VacuumMode, 'never'>): Promise<string[]>;
}

/** One retention: whole ms, or `Infinity` for never. */
const RETENTION_MS = o.number().int().min(0).orInfinity();

/**
 * The `retention` option of a component (`startPruner`, `retention.prune`): overrides of
 * {@link RETENTION_DEFAULTS}, each a whole number of ms >= 0 or `Infinity` (`undefined` keeps the default);
 * a key that is not a retention is refused, since a misspelt one would silently keep the default. Gives the
 * full policy.
 */
export const retentionOption = new Schema<RetentionPolicy, Partial<RetentionPolicy> | undefined>(
  (value, option, problems) => {
    const policy = { ...RETENTION_DEFAULTS };
    if (value === undefined) return policy;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      problems.push({ option, rule: 'an object or left out', value });
      return policy;
    }
    for (const [key, ms] of Object.entries(value)) {
      const name = `${option}.${key}`;
      if (!Object.hasOwn(RETENTION_DEFAULTS, key)) {
        problems.push({
          option: name,
          rule: `one of ${Object.keys(RETENTION_DEFAULTS).join(', ')}`,
          value: key,
        });
      } else if (ms !== undefined) {
        policy[key as keyof RetentionPolicy] = RETENTION_MS.check(ms, name, problems);
      }
    }
    return policy;
  },
);

/** The `batchSize` option of a component: see {@link PRUNE_BATCH}. */
export const batchSizeOption = o
  .number()
  .int()
  .min(PRUNE_BATCH.min)
  .max(PRUNE_BATCH.max)
  .default(PRUNE_BATCH.default);

/**
 * The cutoff of a retention of `Infinity`: before every time a store holds (times are ms since the epoch),
 * and still a safe integer, so it binds as a BIGINT.
 */
export const NEVER = Number.MIN_SAFE_INTEGER;

/**
 * A full policy from `overrides` over the defaults (see {@link retentionOption}).
 * @throws OptionsError (`RangeError`, `invalid_options`) naming `owner` and every bad retention: one that is
 *   not an integer >= 0 or Infinity, or an unknown key (a misspelt retention would silently keep the default).
 */
export function retentionPolicy(
  owner: string,
  overrides: Partial<RetentionPolicy> | undefined,
): RetentionPolicy {
  const problems: OptionProblem[] = [];
  const policy = retentionOption.check(overrides, 'retention', problems);
  if (problems.length > 0) throw new OptionsError(owner, problems);
  return policy;
}

/** The cutoffs of `policy` at `now`. */
export function pruneCutoffs(policy: RetentionPolicy, now: number): PruneCutoffs {
  const before = (ms: number) => (ms === Infinity ? NEVER : now - ms);
  return {
    now,
    jobs: {
      completed: before(policy.jobsMs),
      canceled: before(policy.jobsMs),
      failed: before(policy.deadLettersMs),
    },
    inbox: before(policy.webhookInboxMs),
    streamEvents: before(policy.streamEventsMs),
    operations: before(policy.operationsMs),
  };
}

function zeroes<K extends string>(keys: readonly K[]): Record<K, number> {
  return Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
}

/** A turn of the event loop: lets requests and the group commit run between two batches. */
function yieldTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * `store.retention` over a backend's statements: checks the options, then walks the kinds batch by batch
 * (see {@link RetentionStore.prune}). `guard` runs each call while the store is open (rejects once closed).
 */
export function createRetention(
  backend: RetentionBackend,
  clock: Clock,
  guard: <R>(fn: () => Promise<R>) => Promise<R>,
): RetentionStore {
  return {
    prune: (options) => guard(() => prune(backend, clock, options)),
    size: () => guard(() => backend.size()),
    vacuum: async (removed, mode) => {
      const chosen = vacuumMode('retention.vacuum', mode);
      const tables = prunedTables(removed);
      return guard(async () =>
        chosen === 'never' || tables.length === 0 || backend.vacuum === undefined
          ? []
          : backend.vacuum(tables, chosen),
      );
    },
  };
}

/** Checks {@link PruneOptions} and applies their defaults (`now` is the clock's at the call). */
const parsePruneOptions = defineOptions<PruneOptions>()('retention.prune', {
  now: o.number().int().min(0).optional(),
  dryRun: o.boolean().default(false),
  batchSize: batchSizeOption,
  retention: retentionOption,
  signal: o.custom<AbortSignal>((signal) => signal instanceof AbortSignal, 'an AbortSignal').optional(),
});

async function prune(backend: RetentionBackend, clock: Clock, options?: PruneOptions): Promise<PruneReport> {
  const { now = clock.now(), dryRun, batchSize, retention, signal } = parsePruneOptions(options);
  const cutoffs = pruneCutoffs(retention, now);
  const report: PruneReport = {
    dryRun,
    now,
    removed: zeroes(PRUNE_KINDS),
    batches: zeroes<BatchedKind>(['jobs', 'streamEvents', 'idempotency', 'operations']),
    complete: true,
  };
  if (dryRun) {
    await countAll(backend, cutoffs, report);
    return report;
  }
  const stopped = () => signal?.aborted === true;
  /** Runs `batch` until it removes fewer than a full batch; false when stopped first. */
  const drain = async (kind: BatchedKind, batch: () => Promise<number>): Promise<boolean> => {
    for (;;) {
      if (stopped()) return false;
      const removed = await batch();
      if (removed > 0) {
        report.batches[kind]++;
        if (kind !== 'jobs') report.removed[kind] += removed;
      }
      if (removed < batchSize) return true;
      await yieldTurn();
    }
  };
  const steps: Array<() => Promise<boolean>> = [
    ...FINISHED_STATUSES.map((status) => async () => {
      const cutoff = cutoffs.jobs[status];
      if (cutoff === NEVER) return true;
      let from = NEVER;
      return drain('jobs', async () => {
        const batch = await backend.jobsBatch(status, cutoff, cutoffs.inbox, from, batchSize);
        report.removed.jobs += batch.jobs;
        report.removed.jobEvents += batch.jobEvents;
        report.removed.webhookInbox += batch.webhookInbox;
        if (batch.lastFinishedAt !== null) from = batch.lastFinishedAt;
        return batch.jobs;
      });
    }),
    async () => {
      if (cutoffs.streamEvents === NEVER) return true;
      const events = await drain('streamEvents', () =>
        backend.streamEventsBatch(cutoffs.streamEvents, batchSize),
      );
      if (!events) return false;
      // Streams carry no count of their own: the rows left empty by the events above.
      for (;;) {
        if (stopped()) return false;
        if ((await backend.emptyStreamsBatch(cutoffs.streamEvents, batchSize)) < batchSize) return true;
        await yieldTurn();
      }
    },
    () => drain('idempotency', () => backend.idempotencyBatch(now, batchSize)),
    async () =>
      cutoffs.operations === NEVER ||
      drain('operations', () => backend.operationsBatch(cutoffs.operations, batchSize)),
  ];
  for (const step of steps) {
    if (!(await step())) {
      report.complete = false;
      break;
    }
  }
  return report;
}

async function countAll(
  backend: RetentionBackend,
  cutoffs: PruneCutoffs,
  report: PruneReport,
): Promise<void> {
  for (const status of FINISHED_STATUSES) {
    const cutoff = cutoffs.jobs[status];
    if (cutoff === NEVER) continue;
    const counted = await backend.countJobs(status, cutoff, cutoffs.inbox);
    report.removed.jobs += counted.jobs;
    report.removed.jobEvents += counted.jobEvents;
    report.removed.webhookInbox += counted.webhookInbox;
  }
  if (cutoffs.streamEvents !== NEVER) {
    report.removed.streamEvents = await backend.countStreamEvents(cutoffs.streamEvents);
  }
  report.removed.idempotency = await backend.countIdempotency(cutoffs.now);
  if (cutoffs.operations !== NEVER) {
    report.removed.operations = await backend.countOperations(cutoffs.operations);
  }
}
