/**
 * The jobs runtime's metrics: run time, enqueue-to-start and dead letters from the worker's run events, and,
 * on scrape, jobs by status, queue depth and the oldest pending age from the store's `stats()`, bounded in
 * time so a slow or hung store never hangs a scrape.
 */
import type { Disposable } from '../../core/index.js';
import type { Jobs } from '../../jobs/index.js';
import { JOB_STATUSES, type JobStats } from '../../store/index.js';
import type { BoundedCollections, Instruments } from './instruments.js';
import { all } from './observers.js';

/** What {@link JobMetrics.observe} reads of a jobs runtime (any `createJobs` result fits). */
export type ObservedJobs = Pick<Jobs, 'onStarted' | 'onRunEnded' | 'stats'>;

/** Where the scrape-time job gauges come from: `Jobs` or the `JobStore` itself. */
export interface JobStatsSource {
  stats(): Promise<JobStats>;
}

/** The collector name of the store read in `metrics_collect_errors_total`. */
export const JOBS_COLLECTOR = 'jobs';

/** The jobs runtime observed by one `createMetrics` (one at a time). */
export class JobMetrics {
  private source: JobStatsSource | undefined;
  /** The store call in flight, shared until it ends: a hung store is asked once, not once per scrape. */
  private inflight: Promise<JobStats> | undefined;
  /** This scrape's bounded read, shared by the three gauges. */
  private scrape: Promise<JobStats | undefined> | undefined;

  constructor(
    private readonly m: Instruments,
    private readonly collections: BoundedCollections,
  ) {}

  /** @throws Error when a jobs runtime is observed already (dispose it first). */
  observe(jobs: ObservedJobs, store: JobStatsSource = jobs): Disposable {
    if (this.source !== undefined) {
      throw new Error('metrics: a jobs runtime is observed already; dispose its subscription first');
    }
    const { m } = this;
    const subscriptions = [
      jobs.onStarted((e) => {
        // The first run only: a retry's wait is its backoff, not the queue.
        if (e.attempt === 1)
          m.jobEnqueueToStart.observe({ type: e.type }, Math.max(0, e.startedAt - e.runAt) / 1000);
      }),
      jobs.onRunEnded((e) => {
        m.jobRunDuration.observe({ type: e.type, outcome: e.outcome }, e.durationMs / 1000);
        if (e.outcome === 'failed') m.jobDeadLetters.inc({ type: e.type });
      }),
    ];
    this.source = store;
    subscriptions.push({
      dispose: () => {
        if (this.source === store) this.source = undefined;
      },
    });
    return all(subscriptions);
  }

  /** Scrape: `jobs{status}`. */
  async collectByStatus(): Promise<void> {
    const stats = await this.read();
    const gauge = this.m.jobs;
    gauge.reset();
    if (stats === undefined) return;
    for (const status of JOB_STATUSES) gauge.set({ status }, stats.counts[status] ?? 0);
  }

  /** Scrape: `job_queue_depth` (pending jobs); left out when the store did not answer. */
  async collectQueueDepth(): Promise<void> {
    const stats = await this.read();
    if (stats === undefined) this.m.jobQueueDepth.remove();
    else this.m.jobQueueDepth.set(stats.counts.pending ?? 0);
  }

  /** Scrape: `job_oldest_pending_age_seconds` (0 when nothing due waits); left out without an answer. */
  async collectOldestAge(): Promise<void> {
    const stats = await this.read();
    if (stats === undefined) this.m.jobOldestPendingAge.remove();
    else this.m.jobOldestPendingAge.set((stats.oldestPendingAgeMs ?? 0) / 1000);
  }

  private read(): Promise<JobStats | undefined> {
    const source = this.source;
    if (source === undefined) return Promise.resolve(undefined);
    if (this.scrape !== undefined) return this.scrape;
    const scrape = this.collections.run(JOBS_COLLECTOR, () => {
      if (this.inflight === undefined) {
        const call = source.stats();
        this.inflight = call;
        const clear = () => {
          if (this.inflight === call) this.inflight = undefined;
        };
        call.then(clear, clear);
      }
      return this.inflight;
    });
    this.scrape = scrape;
    void scrape.then(() => {
      if (this.scrape === scrape) this.scrape = undefined;
    });
    return scrape;
  }
}
