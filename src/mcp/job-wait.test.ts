/**
 * A plain `tools/call` of a job tool with a progress token waits for the job until the call's deadline,
 * forwarding progress on the call's own stream (see `jobTool`). Real SDK client over HTTP, real jobs worker;
 * the server's clock is fake, so the deadline comes only when the test moves it.
 */
import type { Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { BreakwaterError, Deadline, FakeClock } from '../core/index.js';
import type { Jobs } from '../jobs/index.js';
import { jobTool } from './job-tools.js';
import {
  connectClient,
  gate,
  PUBLIC_URL,
  startGateway,
  type Gateway,
  type TestClient,
} from './test-support.js';

const DEADLINE_MS = 5_000;
const STILL_RUNNING = (id: string) =>
  `Job ${id} is still running; it goes on in the background. Call get_job_status with its job_id to see progress and the result, or cancel_job to stop it.`;

let clock: FakeClock;
let gw: Gateway;
let tc: TestClient;
let started = gate();
let release = gate();
/** The id of the job the worker ran last. */
let ranJob: string | undefined;

function defineJobs(jobs: Jobs): void {
  jobs.defineJob<{ recipient: string }>('analysis', async ({ jobId: id, payload, progress }) => {
    ranJob = id;
    await progress(1, 4, 'reading the catalog');
    started.open();
    await release.promise;
    await progress(3, 4, 'ranking');
    await progress(2, 4, 'a step back'); // stored (the step changed), never forwarded (not increasing)
    await progress(4, 4, 'done');
    return { gifts: ['scarf', 'book'], for: payload.recipient };
  });
  jobs.defineJob(
    'broken',
    async ({ jobId: id, progress }) => {
      ranJob = id;
      await progress(1, 2, 'asking the gift service');
      await release.promise;
      throw new BreakwaterError('upstream_unavailable', {
        message: 'The gift service is down; try again later.',
        details: { dependency_code: 'gift_service_down' },
      });
    },
    { maxAttempts: 1 },
  );
}

function tools() {
  return [
    jobTool({
      name: 'deep_analysis',
      description: 'Analyses gift ideas in the background.',
      inputSchema: { recipient: z.string() },
      jobType: 'analysis',
      deadlineMs: DEADLINE_MS,
      toResult: (result: { gifts: string[]; for: string }) => ({ gifts: result.gifts }),
      toText: (value: { gifts: string[] }) => `Gift ideas: ${value.gifts.join(', ')}.`,
    }),
    jobTool({
      name: 'broken_analysis',
      description: 'Fails.',
      inputSchema: {},
      jobType: 'broken',
      deadlineMs: DEADLINE_MS,
    }),
  ];
}

beforeEach(async () => {
  started = gate();
  release = gate();
  ranJob = undefined;
  clock = new FakeClock(Date.now());
  gw = await startGateway({ tools, defineJobs, server: { clock } });
  tc = await connectClient(gw.mcpUrl);
});

afterEach(async () => {
  release.open();
  await tc.close();
  await gw.close();
});

/** Calls a tool with a progress token; `seen` collects what `onprogress` got. */
function callWithProgress(name: string, args: Record<string, unknown>, signal?: AbortSignal) {
  const seen: Progress[] = [];
  const first = gate();
  const result = tc.client.callTool({ name, arguments: args }, undefined, {
    onprogress: (p) => {
      seen.push(p);
      first.open();
    },
    signal,
  });
  return { seen, first: first.promise, result };
}

/** Whether the promise has settled, after the client and server had time to exchange one more request. */
async function settledYet(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await tc.client.ping();
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

async function untilEnded(id: string): Promise<void> {
  for await (const _event of gw.jobs.events(id)) {
    // drain until the terminal event
  }
}

describe('a plain call of a job tool with a progress token', () => {
  it('forwards the progress to the call, then answers with the result (toResult, toText)', async () => {
    const call = callWithProgress('deep_analysis', { recipient: 'mum' });
    await started.promise;
    await call.first;
    expect(await settledYet(call.result)).toBe(false);
    release.open();
    expect(await call.result).toEqual({
      content: [{ type: 'text', text: 'Gift ideas: scarf, book.' }],
      structuredContent: { gifts: ['scarf', 'book'] },
    });
    // All sent before the answer; the client hands a progress notification to `onprogress` only when it
    // carries the token of this pending request.
    expect(call.seen).toEqual([
      { progress: 1, total: 4, message: 'reading the catalog' },
      { progress: 3, total: 4, message: 'ranking' },
      { progress: 4, total: 4, message: 'done' },
    ]);
  });

  it('answers a failed job with the error result get_job_status shows', async () => {
    const call = callWithProgress('broken_analysis', {});
    await call.first;
    release.open();
    const result = await call.result;
    const error = {
      code: 'gift_service_down',
      category: 'upstream_unavailable',
      message: 'The gift service is down; try again later.',
      retryable: true,
      retry_after_ms: null,
      outcome: 'failed',
    };
    expect(result).toEqual({
      content: [{ type: 'text', text: error.message }],
      structuredContent: { error },
      isError: true,
    });
    expect(call.seen).toEqual([{ progress: 1, total: 2, message: 'asking the gift service' }]);
    const status = await tc.client.callTool({ name: 'get_job_status', arguments: { job_id: ranJob } });
    expect((status.structuredContent as Record<string, unknown>)['error']).toEqual(error);
  });

  it('answers with the handle when the deadline comes first; the job goes on and completes', async () => {
    const baseline = gw.activeSubscriptions();
    const call = callWithProgress('deep_analysis', { recipient: 'dad' });
    await call.first; // the wait is armed: its progress arrived
    expect(gw.activeSubscriptions()).toBe(baseline + 1);
    clock.tick(DEADLINE_MS - 1);
    expect(await settledYet(call.result)).toBe(false);
    clock.tick(1);
    const id = ranJob!;
    const handle = {
      job_id: id,
      status: 'in_progress',
      status_url: `${PUBLIC_URL}jobs/${id}`,
      events_url: `${PUBLIC_URL}jobs/${id}/events`,
      message: STILL_RUNNING(id),
    };
    expect(await call.result).toEqual({
      content: [{ type: 'text', text: JSON.stringify(handle) }],
      structuredContent: handle,
    });
    // The wait let go of the job's events; the job was not touched.
    expect(gw.activeSubscriptions()).toBe(baseline);
    expect((await gw.jobs.get(id))?.cancelRequestedAt).toBeNull();
    release.open();
    await untilEnded(id);
    expect((await gw.jobs.get(id))?.status).toBe('completed');
    expect(call.seen).toEqual([{ progress: 1, total: 4, message: 'reading the catalog' }]);
  });

  it("answers with the handle at the request's deadline when it is sooner than the tool's", async () => {
    // A front that gives each request 1 s (core's Deadline, as an HTTP edge would).
    const edge = await startGateway({
      tools,
      defineJobs,
      server: { clock },
      configure: (app) =>
        app.addHook('onRequest', (_request, _reply, done) => Deadline.run(1_000, done, clock)),
    });
    const client = await connectClient(edge.mcpUrl);
    try {
      const first = gate();
      const result = client.client.callTool(
        { name: 'deep_analysis', arguments: { recipient: 'aunt' } },
        undefined,
        {
          onprogress: () => first.open(),
        },
      );
      await first.promise;
      clock.tick(999);
      let settled = false;
      void result.then(() => (settled = true));
      await client.client.ping();
      expect(settled).toBe(false);
      clock.tick(1);
      const id = ranJob!;
      expect((await result).structuredContent).toMatchObject({ job_id: id, message: STILL_RUNNING(id) });
    } finally {
      release.open();
      await client.close();
      await edge.close();
    }
  });

  it('stops waiting, not the job, when the client cancels the call', async () => {
    const baseline = gw.activeSubscriptions();
    const controller = new AbortController();
    const call = callWithProgress('deep_analysis', { recipient: 'gran' }, controller.signal);
    await call.first;
    expect(gw.activeSubscriptions()).toBe(baseline + 1);
    controller.abort();
    await expect(call.result).rejects.toThrow();
    await vi.waitFor(() => expect(gw.activeSubscriptions()).toBe(baseline));
    const id = ranJob!;
    expect((await gw.jobs.get(id))?.status).toBe('in_progress');
    release.open();
    await untilEnded(id);
    expect((await gw.jobs.get(id))?.status).toBe('completed');
  });
});

describe('a plain call of a job tool without a progress token', () => {
  it('answers at once with the handle while the job still runs', async () => {
    const result = await tc.client.callTool({ name: 'deep_analysis', arguments: { recipient: 'sis' } });
    const body = result.structuredContent as Record<string, unknown>;
    const id = body['job_id'] as string;
    expect(body['message']).toBe(
      `Started job ${id}; it runs in the background. Call get_job_status with its job_id to see progress and the result, or cancel_job to stop it.`,
    );
    // The job cannot end before the test releases it, so the call did not wait for it.
    await started.promise;
    expect((await gw.jobs.get(id))?.status).toBe('in_progress');
    release.open();
    await untilEnded(id);
    expect((await gw.jobs.get(id))?.status).toBe('completed');
  });
});
