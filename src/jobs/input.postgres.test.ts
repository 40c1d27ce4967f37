import { afterEach, expect, it } from 'vitest';
import { FakeClock } from '../core/index.js';
import { openPostgresStore } from '../store/postgres/index.js';
import { eventually } from '../../test/support/eventually.js';
import { TEST_DATABASE_URL as url, describePostgres, testSchemas } from '../../test/support/postgres.js';
import { harness, type Harness } from './test-support.js';
import type { JobContext } from './types.js';

/**
 * `ctx.requestInput` on PostgreSQL (BREAKWATER_TEST_DATABASE_URL), in a fresh schema dropped after each test:
 * a restart between the question and the answer, and an expiry, with job timing on the FakeClock.
 */
describePostgres('jobs input tests')('ctx.requestInput on PostgreSQL', () => {
  const schemas = testSchemas('bw_jobs_input');
  let schema: string;
  let h: Harness;

  afterEach(async () => {
    await h.jobs.stop({ graceMs: 0 });
    await h.store.close();
    await schemas.drop(schema);
  });

  const ask = (runs: number[], label: number, timeoutMs?: number) => async (ctx: JobContext) => {
    runs.push(label);
    const answer = await ctx.requestInput({
      message: 'Which size?',
      schema: { type: 'object', properties: { size: { type: 'string', enum: ['S', 'M', 'L'] } } },
      ...(timeoutMs && { timeoutMs }),
    });
    return { size: answer.content?.['size'] };
  };

  it('asks, the runtime and its store close, a new one on the same schema gets the answer and completes', async () => {
    schema = await schemas.create();
    const clock = new FakeClock();
    h = await harness({ clock }, await openPostgresStore({ url, clock, schema }));
    const runs: number[] = [];
    h.jobs.defineJob('ask', ask(runs, 1));
    h.jobs.start();
    const id = await h.jobs.enqueue('ask', {});
    await eventually(h.clock, async () => expect((await h.jobs.get(id))!.status).toBe('input_required'));
    await h.jobs.stop({ graceMs: 0 });
    await h.store.close();

    h = await harness({ clock, owner: 'w2' }, await openPostgresStore({ url, clock, schema }));
    h.jobs.defineJob('ask', ask(runs, 2));
    h.jobs.start();
    expect(await h.jobs.inputRequest(id)).toMatchObject({ key: '0', message: 'Which size?' });
    await h.jobs.respond(id, '0', { action: 'accept', content: { size: 'L' } });
    await eventually(h.clock, async () =>
      expect(await h.jobs.get(id)).toMatchObject({ status: 'completed', result: { size: 'L' } }),
    );
    expect(runs).toEqual([1, 2]);
    expect((await h.store.events(id)).map((e) => e.type)).toEqual([
      'job.started',
      'job.input_required',
      'job.input_received',
      'job.started',
      'job.completed',
    ]);
  });

  it('an unanswered question expires: the job fails with input_timeout', async () => {
    schema = await schemas.create();
    const clock = new FakeClock();
    h = await harness({ clock }, await openPostgresStore({ url, clock, schema }));
    h.jobs.defineJob('ask', ask([], 1, 30_000));
    h.jobs.start();
    const id = await h.jobs.enqueue('ask', {});
    await eventually(h.clock, async () => expect((await h.jobs.get(id))!.status).toBe('input_required'));
    await h.clock.tickAsync(30_000);
    await eventually(h.clock, async () =>
      expect((await h.jobs.get(id))!.error).toMatchObject({ code: 'input_timeout', kind: 'permanent' }),
    );
    expect((await h.jobs.get(id))!.status).toBe('failed');
  });
});
