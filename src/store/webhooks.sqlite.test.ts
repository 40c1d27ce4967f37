import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../core/index.js';
import type { JobStore, NewJob } from './jobs.js';
import { groupCommitStats } from './sqlite/batch.js';
import { openSqliteStore } from './sqlite/index.js';
import type { InboxDelivery, WebhookInboxStore } from './webhooks.js';
import { webhookInboxContract } from './webhooks-contract.js';

/** The temp folder of the current test's database file; removed after each test. */
let dir: string | undefined;

webhookInboxContract('sqlite', {
  async open(clock) {
    dir = mkdtempSync(join(tmpdir(), 'breakwater-inbox-'));
    return openSqliteStore({ path: join(dir, 'store.db'), clock });
  },
  async reopen(clock) {
    return openSqliteStore({ path: join(dir!, 'store.db'), clock });
  },
  async cleanup() {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  },
});

describe('SQLite webhook inbox: group commit', () => {
  let folder: string;
  let file: string;
  let clock: FakeClock;
  let store: JobStore & WebhookInboxStore;

  function delivery(eventId: string): InboxDelivery {
    return {
      source: 'stripe',
      eventId,
      eventType: 'charge.succeeded',
      receivedAt: clock.now(),
      occurredAt: null,
      body: `{"id":"${eventId}"}`,
    };
  }

  function job(payload: unknown = {}): (inboxId: string) => NewJob {
    return (inboxId) => ({
      type: 'webhook.stripe',
      payload: { inbox_id: inboxId, payload },
      runAt: clock.now(),
      priority: 0,
      maxAttempts: 3,
    });
  }

  beforeEach(async () => {
    folder = mkdtempSync(join(tmpdir(), 'breakwater-inbox-'));
    file = join(folder, 'store.db');
    clock = new FakeClock();
    store = await openSqliteStore({ path: file, clock });
  });

  afterEach(async () => {
    await store.close();
    rmSync(folder, { recursive: true, force: true });
  });

  it('accepts issued together share one transaction, and each resolves only once it is committed', async () => {
    // Another connection to the file: it sees only committed rows.
    const reader = new Database(file, { readonly: true });
    try {
      const count = reader.prepare<[string], { n: number }>(
        'SELECT count(*) AS n FROM webhook_inbox WHERE event_id = ?',
      );
      const heard: string[] = [];
      store.subscribe((n) => {
        if (n.kind === 'job_available') heard.push(n.type);
      });
      const before = groupCommitStats.transactions;
      const seenAtResolve: number[] = [];
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          store.acceptWebhook(delivery(`evt_${i}`), job()).then((result) => {
            seenAtResolve.push(count.get(result.record.eventId)!.n);
            return result;
          }),
        ),
      );
      expect(groupCommitStats.transactions - before).toBe(1);
      expect(seenAtResolve).toEqual(new Array<number>(20).fill(1));
      expect(heard).toHaveLength(20);
    } finally {
      reader.close();
    }
  });

  it('one failing accept in a batch rejects alone, leaving nothing of its own; duplicates in a batch dedupe', async () => {
    const before = groupCommitStats.transactions;
    const settled = await Promise.allSettled([
      store.acceptWebhook(delivery('evt_a'), job()),
      // JSON.stringify refuses a BigInt inside the savepoint, after the delivery row was inserted.
      store.acceptWebhook(delivery('evt_bad'), job({ n: 1n })),
      store.acceptWebhook(delivery('evt_a'), job()),
      store.acceptWebhook(delivery('evt_c'), job()),
    ]);
    expect(groupCommitStats.transactions - before).toBe(1);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    const values = settled.map((s) => (s.status === 'fulfilled' ? s.value : undefined));
    expect(values.map((v) => v?.duplicate)).toEqual([false, undefined, true, false]);
    expect(values[2]!.record).toEqual(values[0]!.record);
    expect(await store.getWebhook('stripe', 'evt_bad')).toBeUndefined();
    expect((await store.listWebhooks()).map((r) => r.eventId)).toEqual(['evt_c', 'evt_a']);
    expect(await store.list()).toHaveLength(2);
  });

  it('a read right after an accept sees it (queued work is committed first)', async () => {
    const accepted = store.acceptWebhook(delivery('evt_1'), job());
    expect(await store.webhookBacklog('stripe')).toBe(1);
    expect((await store.getWebhook('stripe', 'evt_1'))!.id).toBe((await accepted).record.id);
  });
});
