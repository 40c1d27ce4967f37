import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../store/sqlite/index.js';
import { type Store } from '../store/index.js';
import { replayStoredWebhook } from './replay.js';

describe('replayStoredWebhook', () => {
  let store: Store;
  beforeEach(async () => {
    store = await openSqliteStore({ path: ':memory:' });
  });
  afterEach(async () => store.close());

  const delivery = {
    source: 'payments',
    eventId: 'evt_1',
    eventType: 'charge.succeeded',
    receivedAt: 1_000,
    occurredAt: null,
    body: '{}',
  };

  it('enqueues a copy of the event’s job, due now, owned by its source, and points the row at it', async () => {
    const { record } = await store.acceptWebhook(delivery, (inboxId) => ({
      type: 'webhook.payments',
      payload: { source: 'payments', eventId: 'evt_1', eventType: 'charge.succeeded', inboxId },
      runAt: 1_000,
      priority: 3,
      maxAttempts: 7,
      timeoutMs: 2_500,
      orderingKey: 'order:9',
    }));
    const replayed = await replayStoredWebhook(store, 'payments', 'evt_1', 50_000);
    expect(replayed).toMatchObject({ id: record.id, replays: 1 });
    expect(replayed!.jobId).not.toBe(record.jobId);
    const job = await store.get(replayed!.jobId);
    expect(job).toMatchObject({
      type: 'webhook.payments',
      status: 'pending',
      payload: { source: 'payments', eventId: 'evt_1', eventType: 'charge.succeeded', inboxId: record.id },
      runAt: 50_000,
      priority: 3,
      maxAttempts: 7,
      timeoutMs: 2_500,
      orderingKey: 'order:9',
      attempts: 0,
      // The source's, even though the job it copies had none (accepted before owners were kept).
      owner: 'webhook:payments',
    });
  });

  it('answers undefined for an event that is not stored', async () => {
    expect(await replayStoredWebhook(store, 'payments', 'evt_404')).toBeUndefined();
  });
});
