/**
 * `GET /admin/api/overview`: everything the dashboard shows at a glance, read now — breakers, bulkheads, job
 * counts and queues, recent jobs with their progress, dead letters, operations waiting for a decision, webhook
 * sources with their counts, and spend per rule.
 */
import type { Clock, Disposable } from '../../core/index.js';
import type { Jobs } from '../../jobs/index.js';
import type { BulkheadState } from '../../policy/index.js';
import type { JobStatus, OperationStore, Pruner } from '../../store/index.js';
import { STORE_KIND_LABELS } from '../metrics/index.js';
import type { WebhookReceipt, WebhookRejection } from '../../webhooks/index.js';
import type { ServerStore } from '../options.js';
import { lastProgress, toJobView, type JobView } from '../views.js';
import type { AdminAccess } from './auth.js';
import { readSpend, type AdminSpendSource, type SpendRuleView } from './spend.js';
import {
  iso,
  toBreakerView,
  toBulkheadView,
  toOperationView,
  type AdminBreaker,
  type BreakerView,
  type BulkheadView,
  type OperationView,
} from './views.js';

/** How many items each list of the overview holds at most. */
export const OVERVIEW_LIMITS = {
  recentJobs: 12,
  deadLetters: 20,
  operations: 50,
  /** Pending and running jobs read to count the queues per type. */
  activeJobs: 1_000,
} as const;

/** The webhook ingress as the overview reads it: its sources, their backlog, and its events to count. */
export interface AdminWebhooks {
  readonly sources: readonly string[];
  onReceipt(listener: (receipt: WebhookReceipt) => void): Disposable;
  onRejected(listener: (rejection: WebhookRejection) => void): Disposable;
  readonly store: { webhookBacklog(source: string): Promise<number> };
}

/** What the overview reads. */
export interface OverviewSources {
  jobs: Jobs;
  store: ServerStore;
  operations: Pick<OperationStore, 'list'>;
  breakers: () => readonly AdminBreaker[];
  bulkheads: () => readonly BulkheadState[];
  webhooks: WebhookCounts | undefined;
  spend: AdminSpendSource | undefined;
  /** The gateway's pruner: the store's size as last measured, and its last prune. */
  storeSize?: Pick<Pruner, 'size' | 'lastReport'>;
  publicUrl: string | undefined;
  clock: Clock;
}

/** The store's size as the pruner last measured it, and what its last prune removed (kinds in snake_case). */
export interface StoreSizeView {
  measured_at: string;
  /** Rows per kind: jobs, job_events, webhook_inbox, stream_events, idempotency, operations, audit. */
  rows: Record<string, number>;
  /** Bytes on disk (SQLite: the file and its log; PostgreSQL: the tables with their indexes). */
  bytes: number;
  /** Null before the first prune of this process. */
  last_prune: { at: string; removed: Record<string, number>; complete: boolean } | null;
}

/** A queue: one job type's pending and running jobs. */
export interface QueueView {
  type: string;
  pending: number;
  in_progress: number;
}

/** A webhook source with what this process answered since it started, and its unfinished handler jobs. */
export interface WebhookSourceView {
  name: string;
  accepted: number;
  duplicate: number;
  rejected: number;
  /** Stored events whose handler job has not finished (the admission backlog). */
  backlog: number;
}

/** What `GET /admin/api/overview` answers. */
export interface OverviewView {
  generated_at: string;
  /** How this request was let in, and the gateway's admin mode. */
  admin: { mode: 'token' | 'loopback'; access: AdminAccess };
  breakers: BreakerView[];
  bulkheads: BulkheadView[];
  jobs: {
    counts: Record<JobStatus, number>;
    /** Pending jobs: due, delayed or waiting out a retry backoff. */
    queue_depth: number;
    /** How long the oldest due pending job has waited, ms; null when none. */
    oldest_pending_age_ms: number | null;
    /** Failed jobs (dead letters) in the store. */
    dead_letters: number;
    /** Per job type (the first 1 000 pending and running jobs; `queues_complete` false past that). */
    queues: QueueView[];
    queues_complete: boolean;
    /** The newest jobs, with `progress` and `last_event_seq` on the unfinished ones. */
    recent: JobView[];
  };
  /** The newest failed jobs. */
  dead_letters: JobView[];
  /** Operations in `unknown` or `needs_attention`, newest first. */
  operations: OperationView[];
  /** Null when the app declares no webhooks. */
  webhooks: { sources: WebhookSourceView[] } | null;
  /** Null when the app runs no AI gateway. */
  spend: { rules: SpendRuleView[] } | null;
  /** Null until the store's size was first measured (or without a pruner). */
  store: StoreSizeView | null;
}

/** Counts of the webhook ingress's answers per source, since this process started. */
export class WebhookCounts {
  private readonly counts = new Map<string, { accepted: number; duplicate: number; rejected: number }>();
  private readonly subscriptions: Disposable[];

  constructor(readonly ingress: AdminWebhooks) {
    for (const source of ingress.sources) this.counts.set(source, { accepted: 0, duplicate: 0, rejected: 0 });
    this.subscriptions = [
      ingress.onReceipt((receipt) => {
        const entry = this.counts.get(receipt.source);
        if (entry !== undefined) entry[receipt.duplicate ? 'duplicate' : 'accepted']++;
      }),
      // A delivery to an unknown source has no row: its path is whatever the caller invented.
      ingress.onRejected((rejection) => {
        const entry = rejection.source === undefined ? undefined : this.counts.get(rejection.source);
        if (entry !== undefined) entry.rejected++;
      }),
    ];
  }

  async view(): Promise<WebhookSourceView[]> {
    return Promise.all(
      [...this.counts].map(async ([name, counts]) => ({
        name,
        ...counts,
        backlog: await this.ingress.store.webhookBacklog(name),
      })),
    );
  }

  dispose(): void {
    for (const subscription of this.subscriptions.splice(0)) subscription.dispose();
  }
}

/** Reads the overview now. */
export async function readOverview(
  sources: OverviewSources,
  admin: OverviewView['admin'],
): Promise<OverviewView> {
  const { jobs, publicUrl } = sources;
  const [stats, active, recent, failed, operations, webhooks, spend] = await Promise.all([
    jobs.stats(),
    jobs.list({ status: ['pending', 'in_progress'], limit: OVERVIEW_LIMITS.activeJobs }),
    jobs.list({ limit: OVERVIEW_LIMITS.recentJobs }),
    jobs.list({ status: 'failed', limit: OVERVIEW_LIMITS.deadLetters }),
    sources.operations.list({ states: ['unknown', 'needs_attention'], limit: OVERVIEW_LIMITS.operations }),
    sources.webhooks?.view(),
    sources.spend === undefined ? undefined : readSpend(sources.spend),
  ]);
  const queues = new Map<string, QueueView>();
  for (const job of active) {
    const queue = queues.get(job.type) ?? { type: job.type, pending: 0, in_progress: 0 };
    if (job.status === 'pending') queue.pending++;
    else queue.in_progress++;
    queues.set(job.type, queue);
  }
  const now = sources.clock.now();
  const recentViews = await Promise.all(
    recent.map(async (job) =>
      job.status === 'pending' || job.status === 'in_progress'
        ? toJobView(job, now, publicUrl, await lastProgress(sources.store, job.id))
        : toJobView(job, now, publicUrl),
    ),
  );
  return {
    generated_at: iso(now),
    admin,
    breakers: sources.breakers().map(toBreakerView),
    bulkheads: sources.bulkheads().map(toBulkheadView),
    jobs: {
      counts: stats.counts,
      queue_depth: stats.counts.pending,
      oldest_pending_age_ms: stats.oldestPendingAgeMs,
      dead_letters: stats.counts.failed,
      queues: [...queues.values()].sort((a, b) => a.type.localeCompare(b.type)),
      queues_complete: active.length < OVERVIEW_LIMITS.activeJobs,
      recent: recentViews,
    },
    dead_letters: failed.map((job) => toJobView(job, now, publicUrl)),
    operations: operations.map(toOperationView),
    webhooks: webhooks === undefined ? null : { sources: webhooks },
    spend: spend === undefined ? null : { rules: spend },
    store: storeSizeView(sources.storeSize),
  };
}

/** Keys of `counts` under their snake_case label (`jobEvents` → `job_events`). */
function byLabel(counts: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(counts).map(([kind, n]) => [STORE_KIND_LABELS[kind as keyof typeof STORE_KIND_LABELS], n]),
  );
}

function storeSizeView(pruner: OverviewSources['storeSize']): StoreSizeView | null {
  const size = pruner?.size;
  if (size === undefined) return null;
  const last = pruner?.lastReport;
  return {
    measured_at: iso(size.measuredAt),
    rows: byLabel(size.rows),
    bytes: size.bytes,
    last_prune:
      last === undefined
        ? null
        : { at: iso(last.now), removed: byLabel(last.removed), complete: last.complete },
  };
}
