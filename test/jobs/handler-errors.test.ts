/**
 * What a job handler's own error becomes: a plain `Error` (or a thrown string), which nothing identifies as a
 * dependency's failure, is `handler_failed` (transient: retried per the job's attempts and backoff), not
 * `upstream_unavailable`; the stored error, the `job.retrying` and `job.failed` events, the log line's code
 * and what the model reads (`get_job_status`: code, category and sentence) all say so. Errors that are
 * recognized keep their codes: a programming error stays `internal_error` (fatal, dead letter at once), a
 * `BreakwaterError` its own code.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { BreakwaterError, ERROR_CODES, setLogger } from '../../src/core/index.js';
import { fixedBackoff, flush, harness, type Harness } from '../../src/jobs/test-support.js';
import { jobTool } from '../../src/mcp/index.js';
import { jobErrorInfo } from '../../src/mcp/results.js';
import { connectClient, startGateway } from '../../src/mcp/test-support.js';

const SENTENCE =
  'The task failed with an unexpected error in its own code, not because a service it depends on was unavailable; another try may work, but if it keeps failing it needs a fix.';

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function runtime(): Promise<Harness> {
  const h = await harness();
  cleanups.push(
    () => h.jobs.stop({ graceMs: 0 }),
    () => h.store.close(),
  );
  return h;
}

describe("a handler's own error", () => {
  it('a plain Error is handler_failed, retried per the backoff, then dead-lettered with the same code', async () => {
    const h = await runtime();
    h.jobs.defineJob(
      'reconcile',
      () => {
        throw new Error('orders table has no column "paid_at"');
      },
      { backoff: fixedBackoff(100, 200), maxAttempts: 3 },
    );
    h.jobs.start();
    const t0 = h.clock.now();
    const id = await h.jobs.enqueue('reconcile', {});
    await flush(h.clock);

    const error = {
      code: 'handler_failed',
      message: 'orders table has no column "paid_at"',
      kind: 'transient',
    };
    expect(await h.jobs.get(id)).toMatchObject({ status: 'pending', attempts: 1, runAt: t0 + 100, error });
    await h.clock.tickAsync(100);
    await flush(h.clock);
    expect(await h.jobs.get(id)).toMatchObject({ status: 'pending', attempts: 2, runAt: t0 + 300, error });
    await h.clock.tickAsync(200);
    await flush(h.clock);
    const dead = await h.jobs.get(id);
    expect(dead).toMatchObject({ status: 'failed', attempts: 3, error });
    expect(dead!.error).toEqual(error);

    const events = await h.store.events(id);
    expect(events.map((e) => [e.type, e.payload])).toEqual([
      ['job.started', expect.anything()],
      ['job.retrying', { error, nextAttempt: 2, runAt: t0 + 100 }],
      ['job.started', expect.anything()],
      ['job.retrying', { error, nextAttempt: 3, runAt: t0 + 300 }],
      ['job.started', expect.anything()],
      ['job.failed', { error, attempts: 3 }],
    ]);

    // What the model reads of the dead letter: the code's own sentence, never the raw message.
    expect(jobErrorInfo(dead!.error, 'failed', h.clock.now())).toEqual({
      code: 'handler_failed',
      category: 'handler_failed',
      message: SENTENCE,
      retryable: true,
      retry_after_ms: null,
      outcome: 'failed',
    });
    expect(ERROR_CODES.handler_failed).toEqual({
      kind: 'transient',
      status: 500,
      title: 'Handler failed',
      sentence: SENTENCE,
    });
  });

  it('a thrown string is handler_failed too; a TypeError stays internal_error, a BreakwaterError its code', async () => {
    const h = await runtime();
    const thrown: unknown[] = [
      'no stock left',
      new TypeError("Cannot read properties of undefined (reading 'sku')"),
      new BreakwaterError('upstream_unavailable', { message: 'the stock service is down' }),
    ];
    h.jobs.defineJob<{ n: number }>(
      'stock',
      (ctx) => {
        throw thrown[ctx.payload.n];
      },
      { maxAttempts: 1 },
    );
    h.jobs.start();
    const ids = [];
    for (const n of [0, 1, 2]) ids.push(await h.jobs.enqueue('stock', { n }));
    await flush(h.clock);
    const errors = await Promise.all(ids.map(async (id) => (await h.jobs.get(id))!.error));
    expect(errors).toEqual([
      { code: 'handler_failed', message: 'no stock left', kind: 'transient' },
      {
        code: 'internal_error',
        message: "Cannot read properties of undefined (reading 'sku')",
        kind: 'fatal',
      },
      {
        code: 'upstream_unavailable',
        message: 'the stock service is down',
        kind: 'transient',
        userFacing: true,
      },
    ]);
  });

  it('the run log line and get_job_status over MCP say handler_failed', async () => {
    const lines: { message: string; fields: Record<string, unknown> }[] = [];
    const keep = (fields: object, message: string) =>
      void lines.push({ message, fields: { ...(fields as Record<string, unknown>) } });
    const installed = setLogger({ info: keep, warn: keep, error: keep });
    cleanups.push(() => installed.dispose());
    const gw = await startGateway({
      tools: () => [
        jobTool({
          name: 'reconcile',
          description: 'Reconciles the orders.',
          inputSchema: { day: z.string() },
          jobType: 'reconcile',
        }),
      ],
      defineJobs: (jobs) =>
        jobs.defineJob(
          'reconcile',
          () => {
            throw new Error('orders table has no column "paid_at"');
          },
          { maxAttempts: 1 },
        ),
    });
    cleanups.push(() => gw.close());
    const mcp = await connectClient(gw.mcpUrl);
    cleanups.push(() => mcp.close());

    const started = await mcp.client.callTool({ name: 'reconcile', arguments: { day: '2026-12-05' } });
    const jobId = (started.structuredContent as { job_id: string }).job_id;
    await vi.waitFor(async () => expect((await gw.jobs.get(jobId))?.status).toBe('failed'));

    const status = await mcp.client.callTool({ name: 'get_job_status', arguments: { job_id: jobId } });
    expect((status.structuredContent as { error: unknown }).error).toEqual({
      code: 'handler_failed',
      category: 'handler_failed',
      message: SENTENCE,
      retryable: true,
      retry_after_ms: null,
      outcome: 'failed',
    });
    expect(lines.find((line) => line.message === 'job run ended')?.fields).toMatchObject({
      job_id: jobId,
      outcome: 'failed',
      code: 'handler_failed',
    });
  });
});
