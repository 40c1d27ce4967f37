import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openSqliteStore } from '../store/sqlite/index.js';
import { type Store } from '../store/index.js';
import { HandlerTable, buildJob, parseEvent, runWebhookJob, webhookJobType } from './dispatch.js';
import { onWebhook, type WebhookContext } from './handlers.js';
import { defineWebhookSource } from './source.js';
import { stripeVerifier } from './verifiers/index.js';

const verifier = stripeVerifier({ secrets: ['whsec_test'] });
const source = defineWebhookSource({
  name: 'payments',
  verifier,
  schema: z.object({ id: z.string(), type: z.string(), amount: z.number().int() }),
});

describe('HandlerTable', () => {
  it('finds the handler of the type, else the source’s *, else none', () => {
    const paid = onWebhook('payments', 'paid', () => 'paid');
    const any = onWebhook('payments', '*', () => 'any');
    const table = new HandlerTable(new Set(['payments', 'other']), [paid, any]);
    expect(table.find('payments', 'paid')).toBe(paid);
    expect(table.find('payments', 'refunded')).toBe(any);
    expect(table.find('other', 'paid')).toBeUndefined();
  });

  it('refuses a handler for an undeclared source and a second handler for a type', () => {
    expect(() => new HandlerTable(new Set(['payments']), [onWebhook('github', 'push', () => 1)])).toThrow(
      "onWebhook: source must be a declared source, got 'github' (declare it with defineWebhookSource)",
    );
    expect(
      () =>
        new HandlerTable(new Set(['payments']), [
          onWebhook('payments', 'paid', () => 1),
          onWebhook('payments', 'paid', () => 2),
        ]),
    ).toThrow("onWebhook(payments): eventType must have one handler, got a second for 'paid'");
  });
});

describe('buildJob', () => {
  it('carries the handler’s attempts and timeout, the ordering key, its source as owner, and no idempotency key', () => {
    const handler = onWebhook('payments', 'paid', () => 1, { maxAttempts: 8, timeoutMs: 2_000 });
    const job = buildJob(
      source,
      handler,
      { eventId: 'evt_1', eventType: 'paid', orderingKey: 'ord_1' },
      'whk_1',
      1_000,
    );
    expect(job).toEqual({
      type: 'webhook.payments',
      payload: { source: 'payments', eventId: 'evt_1', eventType: 'paid', inboxId: 'whk_1' },
      runAt: 1_000,
      priority: 0,
      maxAttempts: 8,
      timeoutMs: 2_000,
      orderingKey: 'ord_1',
      owner: 'webhook:payments',
    });
    expect(webhookJobType('payments')).toBe('webhook.payments');
    // No handler: one attempt, which completes with { handled: false }.
    expect(
      buildJob(source, undefined, { eventId: 'e', eventType: 't', orderingKey: undefined }, 'w', 5),
    ).toEqual({
      type: 'webhook.payments',
      payload: { source: 'payments', eventId: 'e', eventType: 't', inboxId: 'w' },
      runAt: 5,
      priority: 0,
      maxAttempts: 1,
      owner: 'webhook:payments',
    });
  });
});

describe('parseEvent', () => {
  it('parses JSON and applies the schema', () => {
    expect(parseEvent(source, '{"id":"evt_1","type":"paid","amount":100}')).toEqual({
      id: 'evt_1',
      type: 'paid',
      amount: 100,
    });
    expect(parseEvent(defineWebhookSource({ name: 'raw', verifier }), '[1,2]')).toEqual([1, 2]);
  });

  it('says what is wrong: not JSON, or the schema’s first issues', () => {
    expect(() => parseEvent(source, '{"id":')).toThrow('The payments webhook body is not valid JSON.');
    let error: unknown;
    try {
      parseEvent(source, '{"id":"evt_1","type":"paid","amount":1.5}');
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({
      code: 'invalid_payload',
      status: 400,
      details: { issues: [{ path: '/amount', message: expect.any(String) }] },
    });
    expect((error as Error).message).toMatch(
      /^The payments webhook body does not match its schema: \/amount /,
    );
  });
});

describe('runWebhookJob', () => {
  let store: Store;
  beforeEach(async () => {
    store = await openSqliteStore({ path: ':memory:' });
  });
  afterEach(async () => store.close());

  async function accept(eventId: string, type: string, body: object) {
    const { record } = await store.acceptWebhook(
      {
        source: 'payments',
        eventId,
        eventType: type,
        receivedAt: 1_000,
        occurredAt: 900,
        body: JSON.stringify(body),
      },
      (inboxId) =>
        buildJob(source, undefined, { eventId, eventType: type, orderingKey: undefined }, inboxId, 1_000),
    );
    return record;
  }

  it('reads the event back from the inbox and runs the handler of its type with the whole context', async () => {
    const seen: WebhookContext<unknown>[] = [];
    const handlers = new HandlerTable(new Set(['payments']), [
      onWebhook('payments', 'paid', (ctx) => {
        seen.push(ctx);
        return { marked: true };
      }),
    ]);
    const record = await accept('evt_1', 'paid', { id: 'evt_1', type: 'paid', amount: 100 });
    const signal = new AbortController().signal;
    const run = runWebhookJob(store, source, handlers);
    const result = await run({
      payload: { source: 'payments', eventId: 'evt_1', eventType: 'paid', inboxId: record.id },
      jobId: 'job_9',
      attempt: 2,
      signal,
    });
    expect(result).toEqual({ handled: true, event_type: 'paid', result: { marked: true } });
    expect(seen).toEqual([
      {
        event: { id: 'evt_1', type: 'paid', amount: 100 },
        eventId: 'evt_1',
        eventType: 'paid',
        occurredAt: 900,
        receivedAt: 1_000,
        source: 'payments',
        signal,
        attempt: 2,
        jobId: 'job_9',
      },
    ]);
  });

  it('completes an event with no handler as not handled, and fails for good when the row is gone', async () => {
    const run = runWebhookJob(store, source, new HandlerTable(new Set(['payments']), []));
    await accept('evt_2', 'refunded', { id: 'evt_2', type: 'refunded', amount: 1 });
    const ctx = { jobId: 'j', attempt: 1, signal: new AbortController().signal };
    await expect(run({ ...ctx, payload: { eventId: 'evt_2' } })).resolves.toEqual({
      handled: false,
      event_type: 'refunded',
    });
    await expect(run({ ...ctx, payload: { eventId: 'evt_404' } })).rejects.toMatchObject({
      code: 'not_found',
      kind: 'permanent',
      message: 'The payments webhook event evt_404 is not in the inbox.',
    });
    await expect(run({ ...ctx, payload: null })).rejects.toMatchObject({
      code: 'invalid_payload',
      kind: 'permanent',
    });
  });
});
