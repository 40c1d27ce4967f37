import { afterEach, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../store/sqlite/index.js';
import { createServer } from './server.js';
import { harness, untilEvents, type Harness } from './test-support.js';
import { optionsErrorOf } from '../../test/support/options.js';

const PROBLEM = 'application/problem+json; charset=utf-8';

describe('health routes', () => {
  let h: Harness;
  afterEach(async () => h.close());

  it('GET /healthz answers 200 { status: ok }', async () => {
    h = await harness();
    const res = await h.app.inject({ url: '/healthz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('GET /readyz is ready with the store reachable and lists the breakers that are not closed', async () => {
    h = await harness({
      breakers: () => [
        { name: 'gift-service', state: 'open', openedAt: Date.UTC(2026, 0, 1), retryAfterMs: 30_000 },
        { name: 'commerce', state: 'closed', openedAt: null, retryAfterMs: null },
        { name: 'analytics', state: 'half-open' },
      ],
    });
    const res = await h.app.inject({ url: '/readyz' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      status: 'ready',
      open_breakers: [
        {
          name: 'gift-service',
          state: 'open',
          opened_at: '2026-01-01T00:00:00.000Z',
          retry_after_ms: 30_000,
        },
        { name: 'analytics', state: 'half-open', opened_at: null, retry_after_ms: null },
      ],
    });
  });

  it('GET /readyz answers 503 problem+json when the store is closed', async () => {
    h = await harness({ breakers: () => [{ name: 'gift-service', state: 'open' }] });
    const closed = await openSqliteStore({ path: ':memory:' });
    await closed.close();
    const app = createServer({ jobs: h.jobs, store: closed, clock: h.clock });
    const res = await app.inject({ url: '/readyz' });
    expect(res.statusCode).toBe(503);
    expect(res.headers['content-type']).toBe(PROBLEM);
    expect(res.json()).toMatchObject({
      code: 'upstream_unavailable',
      status: 503,
      retryable: true,
      detail: 'The job store is not reachable; this instance is not ready.',
      instance: '/readyz',
      open_breakers: [],
    });
    await app.close();
  });

  it('GET /readyz counts a probe that hangs past readyTimeoutMs as unreachable', async () => {
    h = await harness({ ready: () => new Promise(() => undefined), readyTimeoutMs: 2_000 });
    const pending = h.app.inject({ url: '/readyz' });
    await h.clock.tickAsync(1_999);
    let settled = false;
    void pending.then(() => (settled = true));
    await h.clock.tickAsync(0);
    expect(settled).toBe(false);
    await h.clock.tickAsync(1);
    const res = await pending;
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ code: 'upstream_unavailable' });
  });
});

describe('job routes', () => {
  let h: Harness;
  afterEach(async () => h.close());

  it('GET /jobs/:id answers the job in snake_case with its last progress and URLs', async () => {
    h = await harness();
    const id = await h.jobs.enqueue('steps', { secret: 'payload' });
    await untilEvents(h.store, id, 2);
    const res = await h.app.inject({ url: `/jobs/${id}` });
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.json()).toEqual({
      id,
      type: 'steps',
      status: 'in_progress',
      attempts: 1,
      max_attempts: 5,
      priority: 0,
      progress: { step: 1, total: 3, message: 'one' },
      last_event_seq: 2,
      result: null,
      error: null,
      run_at: '2026-01-01T00:00:00.000Z',
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
      finished_at: null,
      cancel_requested_at: null,
      status_url: `/jobs/${id}`,
      events_url: `/jobs/${id}/events`,
    });

    h.gates[0].open();
    h.gates[1].open();
    await untilEvents(h.store, id, 6);
    const done = (await h.app.inject({ url: `/jobs/${id}` })).json();
    expect(done).toMatchObject({
      status: 'completed',
      progress: { step: 3, total: 3 },
      last_event_seq: 6,
      result: { ok: true },
      finished_at: '2026-01-01T00:00:00.000Z',
    });
  });

  it('builds absolute URLs under publicUrl', async () => {
    h = await harness({ publicUrl: 'https://gw.example.com/base/' });
    const id = await h.jobs.enqueue('idle', {});
    const body = (await h.app.inject({ url: `/jobs/${id}` })).json();
    expect(body.status_url).toBe(`https://gw.example.com/base/jobs/${id}`);
    expect(body.events_url).toBe(`https://gw.example.com/base/jobs/${id}/events`);
    expect(body.progress).toBeNull();
    expect(body.last_event_seq).toBe(0);
  });

  it('GET /jobs/:id of an unknown job is a 404 problem', async () => {
    h = await harness();
    const res = await h.app.inject({ url: '/jobs/job_missing' });
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toBe(PROBLEM);
    expect(res.json()).toEqual({
      type: 'urn:breakwater:error:not_found',
      title: 'Not found',
      status: 404,
      detail: 'There is no job job_missing.',
      code: 'not_found',
      retryable: false,
      retry_after_ms: null,
      outcome: 'failed',
      instance: '/jobs/job_missing',
    });
  });

  it('POST /jobs/:id/cancel answers 202 with the job, and 404 for an unknown one', async () => {
    h = await harness();
    const id = await h.jobs.enqueue('idle', {});
    const res = await h.app.inject({ method: 'POST', url: `/jobs/${id}/cancel` });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({ id, status: 'canceled', finished_at: '2026-01-01T00:00:00.000Z' });
    expect((await h.store.events(id)).map((e) => e.type)).toEqual(['job.canceled']);

    const running = await h.jobs.enqueue('steps', {});
    await untilEvents(h.store, running, 2);
    const asked = await h.app.inject({ method: 'POST', url: `/jobs/${running}/cancel` });
    expect(asked.statusCode).toBe(202);
    expect(asked.json()).toMatchObject({
      status: 'in_progress',
      cancel_requested_at: '2026-01-01T00:00:00.000Z',
      progress: { step: 1, total: 3, message: 'one' },
    });

    const missing = await h.app.inject({ method: 'POST', url: '/jobs/job_missing/cancel' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ code: 'not_found', detail: 'There is no job job_missing.' });
  });

  it('GET /jobs lists newest first with status, type and limit filters and a next page id', async () => {
    h = await harness();
    const a = await h.jobs.enqueue('idle', { n: 1 });
    const b = await h.jobs.enqueue('idle', { n: 2 });
    const c = await h.jobs.enqueue('quick', {});
    await untilEvents(h.store, c, 2);

    const all = (await h.app.inject({ url: '/jobs' })).json();
    expect(all.jobs.map((j: { id: string }) => j.id)).toEqual([c, b, a]);
    expect(all.next_before_id).toBeNull();
    expect(all.jobs[0]).not.toHaveProperty('progress');

    const page = (await h.app.inject({ url: '/jobs?type=idle&limit=1' })).json();
    expect(page.jobs.map((j: { id: string }) => j.id)).toEqual([b]);
    expect(page.next_before_id).toBe(b);
    const next = (await h.app.inject({ url: `/jobs?type=idle&limit=1&before_id=${b}` })).json();
    expect(next.jobs.map((j: { id: string }) => j.id)).toEqual([a]);

    const done = (await h.app.inject({ url: '/jobs?status=completed' })).json();
    expect(done.jobs.map((j: { id: string }) => j.id)).toEqual([c]);
    const several = (await h.app.inject({ url: '/jobs?status=completed&status=pending' })).json();
    expect(several.jobs.map((j: { id: string }) => j.id)).toEqual([c, b, a]);
  });

  it('GET /jobs rejects bad filters with 400 invalid_payload naming the field', async () => {
    h = await harness();
    const res = await h.app.inject({ url: '/jobs?limit=0' });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toBe(PROBLEM);
    expect(res.json()).toMatchObject({
      code: 'invalid_payload',
      status: 400,
      detail: 'The request querystring is not valid: /limit must be >= 1.',
      validation: [{ in: 'querystring', path: '/limit', message: 'must be >= 1' }],
    });
    const status = await h.app.inject({ url: '/jobs?status=done' });
    expect(status.statusCode).toBe(400);
    expect(status.json()).toMatchObject({ code: 'invalid_payload' });
  });
});

describe('createServer options', () => {
  let h: Harness;
  afterEach(async () => h.close());

  it('rejects a bad option with a RangeError naming it', async () => {
    h = await harness();
    const base = { jobs: h.jobs, store: h.store };
    expect(() => createServer({ ...base, keepAliveMs: 0 })).toThrow(
      new RangeError('createServer: keepAliveMs must be an integer >= 1, got 0'),
    );
    expect(() => createServer({ ...base, publicUrl: 'ftp://x' })).toThrow(
      /createServer: publicUrl must be an http\(s\) URL/,
    );
    expect(() => createServer({ ...base, requestTimeoutMs: 1.5 })).toThrow(/requestTimeoutMs/);
    expect(() => createServer({ ...base, store: undefined as never })).toThrow(/createServer: store/);
    expect(() => createServer({ ...base, routes: ['x' as never] })).toThrow(/createServer: routes/);
  });

  it('reports every bad option at once in one OptionsError', async () => {
    h = await harness();
    const error = optionsErrorOf(() =>
      createServer({
        jobs: {} as never,
        store: h.store,
        readyTimeoutMs: 0,
        publicUrl: 'https://gw.example.com/?x=1',
        logger: 'info' as never,
        shutdownGraceMs: -1,
        clock: {} as never,
        allowedHosts: ['a', 1 as never],
      }),
    );
    expect([error.code, error.owner]).toEqual(['invalid_options', 'createServer']);
    expect(error.problems.map((p) => [p.option, p.value])).toEqual([
      ['jobs', {}],
      ['readyTimeoutMs', 0],
      ['publicUrl', 'https://gw.example.com/?x=1'],
      ['logger', 'info'],
      ['shutdownGraceMs', -1],
      ['clock', {}],
      ['allowedHosts', ['a', 1]],
    ]);
    expect(error.message).toBe(
      'createServer: jobs must be a Jobs runtime (createJobs), got an object; readyTimeoutMs must be an ' +
        "integer >= 1, got 0; publicUrl must be an http(s) URL without query or fragment, got 'https://gw." +
        "example.com/?x=1'; logger must be a boolean or pino options, got 'info'; shutdownGraceMs must be " +
        'an integer >= 0, got -1; clock must be a Clock with now(), setTimeout() and clearTimeout(), got ' +
        "an object; allowedHosts must be an array of strings, got ['a', 1]",
    );
  });
});
