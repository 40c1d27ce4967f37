/**
 * Retention on a running gateway (`startGateway`, what `breakwater serve` runs), on its own fake clock: the
 * background pruner measures the store at start, prunes once per interval, shows the store's size on
 * `/metrics` and the dashboard, leaves the audit log verifying, and stops with the gateway.
 */
import { describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../../src/gateway/index.js';
import { FakeClock } from '../../src/core/index.js';
import { verifyAudit } from '../../src/operations/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { tempDb, useCleanups } from '../support/cleanups.js';
import { SEEDED_REMOVED, seedFinishedState } from './support.js';

const defer = useCleanups();
const DAY_MS = 86_400_000;
const PRUNE_EVERY_MS = 60_000;

/** The samples of one metric as `labels → value`. */
function samples(text: string, name: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^([a-z_:]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (match?.[1] === name) found.set(match[2] ?? '', Number(match[3]));
  }
  return found;
}

async function scrape(gw: Gateway): Promise<string> {
  const answer = await fetch(`${gw.url}/metrics`);
  expect(answer.status).toBe(200);
  return answer.text();
}

/** `{kind="…"}` → n for every kind, in the order the gauge lists them. */
function byKind(counts: Record<string, number>): Map<string, number> {
  return new Map(Object.entries(counts).map(([kind, n]) => [`{kind="${kind}"}`, n]));
}

describe('the gateway prunes', () => {
  it('every interval on its clock; /metrics and the dashboard show the size; the audit log still verifies', async () => {
    const db = tempDb(defer, 'breakwater-retention-gw');
    const clock = new FakeClock();
    const seedStore = await openSqliteStore({ path: db, clock });
    const kept = await seedFinishedState(seedStore, clock);
    await seedStore.close();
    // 40 days later, the gateway starts on the same file.
    await clock.tickAsync(40 * DAY_MS);
    const gw = await startGateway({
      app: { setup: () => ({ name: 'retention-test', version: '1.0.0' }) },
      store: db,
      clock,
      port: 0,
      worker: false,
      log: () => undefined,
      graceMs: 100,
      pruneEveryMs: PRUNE_EVERY_MS,
      env: {},
    });
    defer(() => gw.close());

    // Measured at start, before any prune.
    await expect.poll(() => gw.pruner.size?.rows.jobs).toBe(6);
    const before = {
      jobs: 6,
      job_events: 8,
      webhook_inbox: 1,
      stream_events: 3,
      idempotency: 1,
      operations: 2,
      audit: 3,
    };
    const first = await scrape(gw);
    expect(samples(first, 'breakwater_store_rows')).toEqual(byKind(before));
    expect(samples(first, 'breakwater_store_size_bytes').get('')).toBe(gw.pruner.size!.bytes);
    expect(gw.pruner.size!.bytes).toBeGreaterThan(0);
    const zero = {
      jobs: 0,
      job_events: 0,
      webhook_inbox: 0,
      stream_events: 0,
      idempotency: 0,
      operations: 0,
    };
    expect(samples(first, 'breakwater_store_pruned_rows_total')).toEqual(byKind(zero));

    // The first round comes within the interval and its jitter (10 % either way), not before 90 % of it.
    await clock.tickAsync(PRUNE_EVERY_MS * 0.9 - 1);
    expect(gw.pruner.lastReport).toBeUndefined();
    await clock.tickAsync(PRUNE_EVERY_MS * 0.2 + 1);
    await expect.poll(() => gw.pruner.lastReport?.removed).toEqual(SEEDED_REMOVED);
    await expect.poll(() => gw.pruner.size?.rows.jobs).toBe(2);

    const after = await scrape(gw);
    const removed = {
      jobs: 4,
      job_events: 7,
      webhook_inbox: 1,
      stream_events: 3,
      idempotency: 1,
      operations: 1,
    };
    expect(samples(after, 'breakwater_store_pruned_rows_total')).toEqual(byKind(removed));
    expect(samples(after, 'breakwater_store_rows')).toEqual(
      byKind({
        jobs: 2,
        job_events: 1,
        webhook_inbox: 0,
        stream_events: 0,
        idempotency: 0,
        operations: 1,
        audit: 3,
      }),
    );

    const overview = (await (await fetch(`${gw.url}/admin/api/overview`)).json()) as { store: unknown };
    expect(overview.store).toEqual({
      measured_at: new Date(gw.pruner.size!.measuredAt).toISOString(),
      rows: {
        jobs: 2,
        job_events: 1,
        webhook_inbox: 0,
        stream_events: 0,
        idempotency: 0,
        operations: 1,
        audit: 3,
      },
      bytes: gw.pruner.size!.bytes,
      last_prune: {
        at: new Date(gw.pruner.lastReport!.now).toISOString(),
        removed,
        complete: true,
      },
    });
    expect((await gw.store.list()).map((job) => job.id).sort()).toEqual(
      [kept.pendingJob, kept.runningJob].sort(),
    );
    expect(await verifyAudit(gw.store.audit)).toMatchObject({ ok: true, records: 3 });

    await gw.close();
    expect(await gw.pruner.runNow()).toBeUndefined();
  });

  it('refuses to start on a retention variable that is not a duration, naming it', async () => {
    await expect(
      startGateway({
        app: { setup: () => ({ name: 'retention-test', version: '1.0.0' }) },
        store: tempDb(defer, 'breakwater-retention-gw'),
        port: 0,
        worker: false,
        log: () => undefined,
        env: { BREAKWATER_PRUNE_EVERY: '0s' },
      }),
    ).rejects.toThrow("BREAKWATER_PRUNE_EVERY must be a duration above 0, got '0s'");
  });
});
