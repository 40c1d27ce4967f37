import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BreakwaterError, FakeClock, PRINCIPALS, webhookPrincipal } from '../core/index.js';
import type { InputSchema, JobEvent } from '../store/index.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { eventTypes, flush, harness, type Harness } from './test-support.js';
import type { JobContext, Jobs } from './types.js';

const PLACE_AGAIN: InputSchema = {
  type: 'object',
  properties: { placeAgain: { type: 'boolean', description: 'Place the order again?' } },
  required: ['placeAgain'],
};

/** A handler that counts its runs, asks one question, and returns the answer. */
function asker(runs: { count: number }, options: Partial<Parameters<JobContext['requestInput']>[0]> = {}) {
  return async (ctx: JobContext) => {
    runs.count++;
    const answer = await ctx.requestInput({
      message: "I can't confirm the checkout; place it again?",
      schema: PLACE_AGAIN,
      ...options,
    });
    return { answer };
  };
}

async function settle(h: Harness, id: string, status: string): Promise<void> {
  for (let i = 0; i < 50 && (await h.jobs.get(id))?.status !== status; i++) await flush(h.clock);
  expect((await h.jobs.get(id))?.status).toBe(status);
}

describe('jobs: ctx.requestInput (durable replay)', () => {
  let h: Harness;
  const others: { jobs: Jobs; close(): Promise<void> }[] = [];

  afterEach(async () => {
    await h.jobs.stop({ graceMs: 0 });
    for (const other of others.splice(0)) await other.close();
    await h.store.close();
  });

  it('asks, waits in input_required with no lease, and reruns from the start with the answer', async () => {
    h = await harness();
    const runs = { count: 0 };
    h.jobs.defineJob('checkout', asker(runs));
    h.jobs.start();
    const id = await h.jobs.enqueue('checkout', {});
    await settle(h, id, 'input_required');
    const asked = h.clock.now();
    expect(await h.jobs.get(id)).toMatchObject({ attempts: 0, leaseOwner: null, leaseExpiresAt: null });
    expect(await h.jobs.inputRequest(id)).toEqual({
      key: '0',
      message: "I can't confirm the checkout; place it again?",
      schema: PLACE_AGAIN,
      askedAt: asked,
      expiresAt: null,
    });
    // Hours pass: no lease expires, no worker takes it.
    await h.clock.tickAsync(3_600_000);
    expect(runs.count).toBe(1);

    const answered = await h.jobs.respond(id, '0', { action: 'accept', content: { placeAgain: true } });
    expect(answered).toMatchObject({ status: 'pending' });
    await settle(h, id, 'completed');
    expect(runs.count).toBe(2);
    expect(await h.jobs.get(id)).toMatchObject({
      result: { answer: { action: 'accept', content: { placeAgain: true } } },
      attempts: 1,
    });
    expect(await h.jobs.inputRequest(id)).toBeNull();
    expect(await eventTypes(h.store, id)).toEqual([
      ['job.started', 1],
      ['job.input_required', 2],
      ['job.input_received', 3],
      ['job.started', 4],
      ['job.completed', 5],
    ]);
  });

  it('a restart: the runtime closes while the job waits; a new one on the same file gets the answer', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'breakwater-input-'));
    const path = join(dir, 'store.db');
    const clock = new FakeClock();
    h = await harness({ clock }, await openSqliteStore({ path, clock, watchMs: 0 }));
    const first = { count: 0 };
    h.jobs.defineJob('checkout', asker(first));
    h.jobs.start();
    const id = await h.jobs.enqueue('checkout', {});
    await settle(h, id, 'input_required');
    await h.jobs.stop({ graceMs: 0 });
    await h.store.close();

    h = await harness({ clock }, await openSqliteStore({ path, clock, watchMs: 0 }));
    const second = { count: 0 };
    h.jobs.defineJob('checkout', asker(second));
    h.jobs.start();
    await h.jobs.respond(id, '0', { action: 'accept', content: { placeAgain: false } });
    await settle(h, id, 'completed');
    expect([first.count, second.count]).toEqual([1, 1]);
    expect((await h.jobs.get(id))!.result).toEqual({
      answer: { action: 'accept', content: { placeAgain: false } },
    });
    others.push({ jobs: h.jobs, close: async () => rmSync(dir, { recursive: true, force: true }) });
  });

  it('another worker on the same store runs the answered job', async () => {
    h = await harness();
    const mine = { count: 0 };
    const theirs = { count: 0 };
    h.jobs.defineJob('checkout', asker(mine));
    h.jobs.start();
    const id = await h.jobs.enqueue('checkout', {});
    await settle(h, id, 'input_required');
    await h.jobs.stop({ graceMs: 0 });
    const other = (await harness({ clock: h.clock, owner: 'w2' }, h.store)).jobs;
    others.push({ jobs: other, close: () => other.stop({ graceMs: 0 }) });
    other.defineJob('checkout', asker(theirs));
    other.start();
    await other.respond(id, '0', { action: 'accept', content: { placeAgain: true } });
    await settle(h, id, 'completed');
    expect([mine.count, theirs.count]).toEqual([1, 1]);
  });

  it('cancel while waiting ends it canceled at once; an answer after it is input_not_awaited', async () => {
    h = await harness();
    const runs = { count: 0 };
    h.jobs.defineJob('checkout', asker(runs));
    h.jobs.start();
    const id = await h.jobs.enqueue('checkout', {});
    await settle(h, id, 'input_required');
    expect(await h.jobs.cancel(id)).toMatchObject({ status: 'canceled', finishedAt: h.clock.now() });
    const error = await h.jobs
      .respond(id, '0', { action: 'accept', content: { placeAgain: true } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BreakwaterError);
    expect(error).toMatchObject({
      code: 'input_not_awaited',
      status: 409,
      message: `Job ${id} is not waiting for input (it is canceled).`,
      details: { status: 'canceled' },
    });
    await flush(h.clock);
    expect(runs.count).toBe(1);
  });

  it('an unanswered question with timeoutMs fails the job with input_timeout when it expires', async () => {
    h = await harness();
    const ended: JobEvent[] = [];
    h.jobs.onSettled((event) => ended.push(event));
    h.jobs.defineJob('checkout', asker({ count: 0 }, { timeoutMs: 60_000 }));
    h.jobs.start();
    const id = await h.jobs.enqueue('checkout', {});
    await settle(h, id, 'input_required');
    const asked = h.clock.now();
    expect((await h.jobs.inputRequest(id))!.expiresAt).toBe(asked + 60_000);
    await h.clock.tickAsync(59_999);
    await flush(h.clock);
    expect((await h.jobs.get(id))!.status).toBe('input_required');
    await h.clock.tickAsync(1);
    await settle(h, id, 'failed');
    const error = {
      code: 'input_timeout',
      message: "Nobody answered the job's question within 60000 ms, so the job stopped.",
      kind: 'permanent',
      userFacing: true,
    };
    expect(await h.jobs.get(id)).toMatchObject({ error, finishedAt: asked + 60_000 });
    expect(ended).toMatchObject([{ jobId: id, type: 'job.failed', payload: { error, attempts: 0 } }]);
  });

  it('a stranger gets not_found and changes nothing; the owner and admin may answer', async () => {
    h = await harness();
    h.jobs.defineJob('checkout', asker({ count: 0 }));
    h.jobs.start();
    const id = await h.jobs.enqueue('checkout', {}, { owner: 'webhook:shop' });
    await settle(h, id, 'input_required');
    const answer = { action: 'accept', content: { placeAgain: true } };
    const stranger = await h.jobs
      .respond(id, '0', answer, { principal: webhookPrincipal('other') })
      .catch((e: unknown) => e);
    expect(stranger).toMatchObject({ code: 'not_found', status: 404, message: `There is no job ${id}.` });
    expect((await h.jobs.get(id))!.status).toBe('input_required');
    expect(await h.jobs.respond(id, '0', answer, { principal: webhookPrincipal('shop') })).toMatchObject({
      status: 'pending',
    });
    const missing = await h.jobs
      .respond('job_missing', '0', answer, { principal: PRINCIPALS.admin })
      .catch((e: unknown) => e);
    expect(missing).toMatchObject({ code: 'not_found' });
  });

  it('an answer failing the schema, another key or too large is refused; the question stays, then answered', async () => {
    h = await harness();
    h.jobs.defineJob('checkout', asker({ count: 0 }));
    h.jobs.start();
    const id = await h.jobs.enqueue('checkout', {});
    await settle(h, id, 'input_required');
    const question = await h.jobs.inputRequest(id);
    const refusal = (key: string, answer: unknown) =>
      h.jobs.respond(id, key, answer).catch((e: unknown) => e);

    const accept = (content: unknown) => ({ action: 'accept', content });
    expect(await refusal('0', accept({ placeAgain: 'yes', extra: 1 }))).toMatchObject({
      code: 'invalid_payload',
      status: 400,
      message:
        "The answer does not fit the question's schema: placeAgain must be true or false; extra is not a requested field.",
      details: { problems: ['placeAgain must be true or false', 'extra is not a requested field'] },
    });
    expect(await refusal('0', accept({}))).toMatchObject({
      details: { problems: ['placeAgain is required'] },
    });
    expect(await refusal('0', { action: 'accept' })).toMatchObject({
      details: { problems: ['placeAgain is required'] },
    });
    expect(await refusal('0', { placeAgain: true })).toMatchObject({
      code: 'invalid_payload',
      message:
        "The answer must be { action: 'accept' | 'decline' | 'cancel', content? }: action must be accept, decline or cancel.",
      details: { problems: ['action must be accept, decline or cancel'] },
    });
    expect(await refusal('0', { action: 'decline', content: { placeAgain: true } })).toMatchObject({
      details: { problems: ['content goes only with accept, not decline'] },
    });
    expect(await refusal('0', 'yes')).toMatchObject({
      details: { problems: ['the answer must be an object { action, content? }'] },
    });
    expect(await refusal('1', accept({ placeAgain: true }))).toMatchObject({
      code: 'input_not_awaited',
      message: `Job ${id} waits for the answer to question "0", not this one.`,
      details: { status: 'input_required', key: '0' },
    });
    expect(await refusal('0', accept({ placeAgain: true, pad: 'x'.repeat(65_536) }))).toMatchObject({
      code: 'payload_too_large',
      status: 413,
      details: { max_bytes: 65_536 },
    });
    expect(await refusal('', accept({ placeAgain: true }))).toMatchObject({
      code: 'invalid_payload',
      message: 'The key must be 1..64 of A-Za-z0-9_.:-.',
    });
    expect(await refusal('k'.repeat(65), accept({ placeAgain: true }))).toMatchObject({
      code: 'invalid_payload',
    });
    expect(await refusal('a b', accept({ placeAgain: true }))).toMatchObject({ code: 'invalid_payload' });
    // Nothing was lost: the same question waits, and a fitting answer completes the job.
    expect(await h.jobs.get(id)).toMatchObject({ status: 'input_required' });
    expect(await h.jobs.inputRequest(id)).toEqual(question);
    await h.jobs.respond(id, '0', { action: 'accept', content: { placeAgain: true } });
    await settle(h, id, 'completed');
  });

  it('answers replay by ordinal and by key; past maxInputRounds the job fails for good', async () => {
    h = await harness();
    const seen: unknown[] = [];
    h.jobs.defineJob(
      'survey',
      async (ctx) => {
        const first = await ctx.requestInput({ message: 'Name?' });
        const size = await ctx.requestInput({ message: 'Size?', key: 'size' });
        seen.push([first, size]);
        return ctx.requestInput({ message: 'Colour?' });
      },
      { maxInputRounds: 2 },
    );
    h.jobs.start();
    const id = await h.jobs.enqueue('survey', {});
    await settle(h, id, 'input_required');
    await h.jobs.respond(id, '0', { action: 'accept' });
    await settle(h, id, 'input_required');
    expect((await h.jobs.inputRequest(id))!.key).toBe('size');
    await h.jobs.respond(id, 'size', { action: 'decline' });
    await settle(h, id, 'failed');
    expect(seen).toEqual([[{ action: 'accept' }, { action: 'decline' }]]);
    expect((await h.jobs.get(id))!.error).toMatchObject({
      code: 'invalid_payload',
      kind: 'permanent',
      message: 'The job asked 2 questions already, the most its type allows.',
    });
  });

  it('a job with an ordering key cannot ask: the run fails for good', async () => {
    h = await harness();
    h.jobs.defineJob('checkout', asker({ count: 0 }));
    h.jobs.start();
    const id = await h.jobs.enqueue('checkout', {}, { orderingKey: 'order-1' });
    await settle(h, id, 'failed');
    expect((await h.jobs.get(id))!.error).toMatchObject({
      code: 'invalid_payload',
      message:
        'A job with an ordering key cannot ask for input: while it waited, the jobs behind it would run first.',
    });
  });
});
