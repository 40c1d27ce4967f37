import { afterEach, describe, expect, it } from 'vitest';
import { BreakwaterError } from '../core/index.js';
import type { InputSchema } from '../store/index.js';
import { eventTypes, flush, harness, type Harness } from './test-support.js';
import type { JobContext } from './types.js';

const SIZE: InputSchema = {
  type: 'object',
  properties: { size: { type: 'string', enum: ['S', 'M', 'L'] } },
  required: ['size'],
};

/** Asks size and note at once, then one more question; returns every answer. */
function survey(runs: { count: number }, timeouts: { size?: number; note?: number } = {}) {
  return async (ctx: JobContext) => {
    runs.count++;
    const both = await ctx.requestInputs({
      size: { message: 'Which size?', schema: SIZE, timeoutMs: timeouts.size },
      note: { message: 'A note for the card?', timeoutMs: timeouts.note },
    });
    const sure = await ctx.requestInput({ message: 'Sure?' });
    return { ...both, sure };
  };
}

async function settle(h: Harness, id: string, status: string): Promise<void> {
  for (let i = 0; i < 50 && (await h.jobs.get(id))?.status !== status; i++) await flush(h.clock);
  expect((await h.jobs.get(id))?.status).toBe(status);
}

async function refusal(promise: Promise<unknown>): Promise<BreakwaterError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BreakwaterError);
  return error as BreakwaterError;
}

describe('jobs: ctx.requestInputs (several questions at once)', () => {
  let h: Harness;

  afterEach(async () => {
    await h.jobs.stop({ graceMs: 0 });
    await h.store.close();
  });

  it('opens every question at once; the job waits until each is answered, then reruns', async () => {
    h = await harness();
    const runs = { count: 0 };
    h.jobs.defineJob('survey', survey(runs));
    h.jobs.start();
    const id = await h.jobs.enqueue('survey', {});
    await settle(h, id, 'input_required');
    const asked = h.clock.now();
    expect((await h.store.jobInput(id))!.requests).toEqual([
      { key: 'size', message: 'Which size?', schema: SIZE, askedAt: asked, expiresAt: null },
      { key: 'note', message: 'A note for the card?', schema: null, askedAt: asked, expiresAt: null },
    ]);
    // Partial: the note is answered, size stays open and the job does not run.
    expect(await h.jobs.respond(id, 'note', { action: 'accept' })).toMatchObject({
      status: 'input_required',
    });
    await flush(h.clock);
    expect(runs.count).toBe(1);
    expect((await h.store.jobInput(id))!.requests.map((r) => r.key)).toEqual(['size']);
    const twice = await refusal(h.jobs.respond(id, 'note', { action: 'decline' }));
    expect([twice.code, twice.details]).toEqual([
      'input_not_awaited',
      { status: 'input_required', key: 'size' },
    ]);
    expect(await h.jobs.respond(id, 'size', { action: 'accept', content: { size: 'M' } })).toMatchObject({
      status: 'pending',
    });
    // The rerun replays both answers and asks the next question.
    await settle(h, id, 'input_required');
    expect(runs.count).toBe(2);
    expect(await h.jobs.inputRequest(id)).toMatchObject({ key: '1', message: 'Sure?' });
    await h.jobs.respond(id, '1', { action: 'accept' });
    await settle(h, id, 'completed');
    expect((await h.jobs.get(id))!.result).toEqual({
      size: { action: 'accept', content: { size: 'M' } },
      note: { action: 'accept' },
      sure: { action: 'accept' },
    });
    expect(runs.count).toBe(3);
    expect(await eventTypes(h.store, id)).toEqual([
      ['job.started', 1],
      ['job.input_required', 2],
      ['job.input_received', 3],
      ['job.input_received', 4],
      ['job.started', 5],
      ['job.input_required', 6],
      ['job.input_received', 7],
      ['job.started', 8],
      ['job.completed', 9],
    ]);
  });

  it('a wrong key names every open one; a bad answer to one changes nothing', async () => {
    h = await harness();
    h.jobs.defineJob('survey', survey({ count: 0 }));
    h.jobs.start();
    const id = await h.jobs.enqueue('survey', {});
    await settle(h, id, 'input_required');
    const wrong = await refusal(h.jobs.respond(id, '0', { action: 'accept' }));
    expect([wrong.code, wrong.details]).toEqual([
      'input_not_awaited',
      { status: 'input_required', key: 'size', keys: ['size', 'note'] },
    ]);
    const bad = await refusal(h.jobs.respond(id, 'size', { action: 'accept', content: { size: 'XL' } }));
    expect(bad.code).toBe('invalid_payload');
    expect((await h.store.jobInput(id))!.requests.map((r) => r.key)).toEqual(['size', 'note']);
  });

  it('times out at the earliest timeoutMs, even with the other question answered', async () => {
    h = await harness();
    h.jobs.defineJob('survey', survey({ count: 0 }, { size: 60_000, note: 10_000 }));
    h.jobs.start();
    const id = await h.jobs.enqueue('survey', {});
    await settle(h, id, 'input_required');
    const asked = h.clock.now();
    await h.jobs.respond(id, 'size', { action: 'accept', content: { size: 'S' } });
    await h.clock.tickAsync(9_999);
    await flush(h.clock);
    expect((await h.jobs.get(id))!.status).toBe('input_required');
    await h.clock.tickAsync(1);
    await settle(h, id, 'failed');
    expect(await h.jobs.get(id)).toMatchObject({
      error: {
        code: 'input_timeout',
        message: "Nobody answered the job's question within 10000 ms, so the job stopped.",
      },
      finishedAt: asked + 10_000,
    });
  });

  it('cancel ends a job waiting on several questions at once', async () => {
    h = await harness();
    h.jobs.defineJob('survey', survey({ count: 0 }));
    h.jobs.start();
    const id = await h.jobs.enqueue('survey', {});
    await settle(h, id, 'input_required');
    await h.jobs.respond(id, 'note', { action: 'cancel' });
    expect(await h.jobs.cancel(id)).toMatchObject({ status: 'canceled' });
    const late = await refusal(h.jobs.respond(id, 'size', { action: 'accept', content: { size: 'L' } }));
    expect([late.code, late.details]).toEqual(['input_not_awaited', { status: 'canceled' }]);
  });

  it('bad maps fail the run for good: empty, too many, a bad key', async () => {
    h = await harness();
    const maps: Record<string, Record<string, { message: string }>> = {
      empty: {},
      many: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, { message: 'Q?' }])),
      key: { 'no spaces': { message: 'Q?' } },
    };
    h.jobs.defineJob<{ map: string }>('bad', (ctx) => ctx.requestInputs(maps[ctx.payload.map]!), {
      maxAttempts: 3,
    });
    h.jobs.start();
    const messages: Record<string, string> = {};
    for (const map of Object.keys(maps)) {
      const id = await h.jobs.enqueue('bad', { map });
      await settle(h, id, 'failed');
      const job = (await h.jobs.get(id))!;
      expect([job.error!.code, job.attempts]).toEqual(['invalid_payload', 1]);
      messages[map] = job.error!.message;
    }
    expect(messages).toEqual({
      empty: 'ctx.requestInputs asks 1..16 questions at once.',
      many: 'ctx.requestInputs asks 1..16 questions at once.',
      key: 'ctx.requestInputs: key "no spaces" must be 1..64 of A-Za-z0-9_.:-.',
    });
  });
});
