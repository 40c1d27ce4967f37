/**
 * The store's size and what retention removed: `store_rows{kind}` and `store_size_bytes` from the pruner's
 * last measurement (read at scrape from memory: counting rows is a pass over each table, done by the pruner
 * after each round, never by a scrape), and `store_pruned_rows_total{kind}` from each round's report. The
 * `kind` label takes the values of {@link STORE_KIND_LABELS}, a fixed set from code, never from data.
 */
import type { Disposable } from '../../core/index.js';
import { SIZE_KINDS, type Pruner, type SizeKind } from '../../store/index.js';
import type { Instruments } from './instruments.js';

/** What {@link StoreMetrics.observe} reads of a pruner (`startPruner`'s result fits). */
export type ObservedStore = Pick<Pruner, 'size' | 'onPruned'>;

/** The `kind` label of each size kind, in the metric names' snake_case. */
export const STORE_KIND_LABELS: Readonly<Record<SizeKind, string>> = {
  jobs: 'jobs',
  jobEvents: 'job_events',
  webhookInbox: 'webhook_inbox',
  streamEvents: 'stream_events',
  idempotency: 'idempotency',
  operations: 'operations',
  audit: 'audit',
};

/** The pruner observed by one `createMetrics` (one at a time). */
export class StoreMetrics {
  private source: ObservedStore | undefined;

  constructor(private readonly m: Instruments) {}

  /** @throws Error when a pruner is observed already (dispose its subscription first). */
  observe(pruner: ObservedStore): Disposable {
    if (this.source !== undefined) {
      throw new Error('metrics: a store is observed already; dispose its subscription first');
    }
    this.source = pruner;
    // Every kind from the start at 0 (the audit log is never pruned, so it has no series here).
    for (const kind of SIZE_KINDS) {
      if (kind !== 'audit') this.m.storePruned.inc({ kind: STORE_KIND_LABELS[kind] }, 0);
    }
    const subscription = pruner.onPruned((report) => {
      for (const [kind, removed] of Object.entries(report.removed) as [SizeKind, number][]) {
        if (removed > 0) this.m.storePruned.inc({ kind: STORE_KIND_LABELS[kind] }, removed);
      }
    });
    return {
      dispose: () => {
        subscription.dispose();
        if (this.source === pruner) this.source = undefined;
      },
    };
  }

  /** Scrape: `store_rows{kind}`; left out until the first measurement. */
  collectRows(): void {
    const gauge = this.m.storeRows;
    gauge.reset();
    const size = this.source?.size;
    if (size === undefined) return;
    for (const kind of SIZE_KINDS) gauge.set({ kind: STORE_KIND_LABELS[kind] }, size.rows[kind]);
  }

  /** Scrape: `store_size_bytes`; left out until the first measurement. */
  collectBytes(): void {
    const size = this.source?.size;
    if (size === undefined) this.m.storeSize.remove();
    else this.m.storeSize.set(size.bytes);
  }
}
