import { afterEach, describe, expect, it } from 'vitest';
import { PrincipalContext } from '../core/index.js';
import { as, keyPrincipal, principalFromHeader } from '../../test/support/principals.js';
import { SseReader, harness, listen, untilEvents, type Harness } from './test-support.js';

/** The problem a job id that does not exist gets (the route's own answer for an unknown id). */
function missing(id: string, path: string) {
  return {
    type: 'urn:breakwater:error:not_found',
    title: 'Not found',
    status: 404,
    detail: `There is no job ${id}.`,
    code: 'not_found',
    retryable: false,
    retry_after_ms: null,
    outcome: 'failed',
    instance: path,
  };
}

const ADA = keyPrincipal('ada');

describe('job routes answer only the owner and admin', () => {
  let h: Harness;

  afterEach(async () => {
    await h.close();
  });

  async function start(): Promise<void> {
    h = await harness();
    principalFromHeader(h.app);
  }

  /** A job of `idle` (stays pending) owned by `owner`. */
  const idleJob = (owner: string) => h.jobs.enqueue('idle', { secret: 'card 4242' }, { owner });

  it('GET /jobs/:id: a stranger gets the 404 of an id that does not exist; the owner and admin get the job', async () => {
    await start();
    const id = await idleJob('key:ada');
    const stranger = await h.app.inject({ url: `/jobs/${id}`, headers: as('bob') });
    const unknown = await h.app.inject({ url: '/jobs/job_missing', headers: as('bob') });
    expect(stranger.statusCode).toBe(404);
    expect(stranger.json()).toEqual(missing(id, `/jobs/${id}`));
    expect(unknown.json()).toEqual(missing('job_missing', '/jobs/job_missing'));
    expect(stranger.headers['content-type']).toBe(unknown.headers['content-type']);

    for (const caller of ['ada', 'admin', 'local']) {
      const seen = await h.app.inject({ url: `/jobs/${id}`, headers: as(caller) });
      expect(seen.statusCode).toBe(200);
      expect(seen.json()).toMatchObject({ id, status: 'pending' });
    }
  });

  it('POST /jobs/:id/cancel: a stranger gets 404 and the job is not canceled; the owner cancels it', async () => {
    await start();
    const id = await idleJob('key:ada');
    const stranger = await h.app.inject({ method: 'POST', url: `/jobs/${id}/cancel`, headers: as('bob') });
    expect(stranger.statusCode).toBe(404);
    expect(stranger.json()).toEqual(missing(id, `/jobs/${id}/cancel`));
    expect((await h.jobs.get(id))!.status).toBe('pending');

    const owner = await h.app.inject({ method: 'POST', url: `/jobs/${id}/cancel`, headers: as('ada') });
    expect(owner.statusCode).toBe(202);
    expect(owner.json()).toMatchObject({ id, status: 'canceled' });
  });

  it("a webhook source's job: only admin sees or cancels it", async () => {
    await start();
    const id = await idleJob('webhook:stripe');
    for (const caller of ['ada', 'stripe']) {
      expect((await h.app.inject({ url: `/jobs/${id}`, headers: as(caller) })).statusCode).toBe(404);
      const cancel = await h.app.inject({ method: 'POST', url: `/jobs/${id}/cancel`, headers: as(caller) });
      expect(cancel.statusCode).toBe(404);
    }
    expect((await h.jobs.get(id))!.status).toBe('pending');
    expect((await h.app.inject({ url: `/jobs/${id}`, headers: as('admin') })).statusCode).toBe(200);
    const cancel = await h.app.inject({ method: 'POST', url: `/jobs/${id}/cancel`, headers: as('admin') });
    expect(cancel.json()).toMatchObject({ id, status: 'canceled' });
  });

  it('a job without an owner (made by the gateway itself) is admin-only', async () => {
    await start();
    const id = await h.jobs.enqueue('idle', {});
    expect((await h.jobs.get(id))!.owner).toBeNull();
    expect((await h.app.inject({ url: `/jobs/${id}`, headers: as('ada') })).statusCode).toBe(404);
    expect((await h.app.inject({ url: `/jobs/${id}`, headers: as('admin') })).statusCode).toBe(200);
  });

  it('GET /jobs: a non-admin lists only its own jobs (pages included); admin lists all, or one owner', async () => {
    await start();
    const a1 = await idleJob('key:ada');
    const b1 = await idleJob('key:bob');
    const a2 = await idleJob('key:ada');
    const w1 = await idleJob('webhook:stripe');
    const a3 = await PrincipalContext.run(ADA, () => h.jobs.enqueue('idle', {}));
    const list = async (caller: string, query = '') => {
      const res = await h.app.inject({ url: `/jobs${query}`, headers: as(caller) });
      expect(res.statusCode).toBe(200);
      const body = res.json() as { jobs: { id: string }[]; next_before_id: string | null };
      return { ids: body.jobs.map((job) => job.id), next: body.next_before_id };
    };
    expect(await list('ada')).toEqual({ ids: [a3, a2, a1], next: null });
    expect(await list('bob')).toEqual({ ids: [b1], next: null });
    expect(await list('carol')).toEqual({ ids: [], next: null });
    expect(await list('ada', '?limit=2')).toEqual({ ids: [a3, a2], next: a2 });
    expect(await list('ada', `?limit=2&before_id=${a2}`)).toEqual({ ids: [a1], next: null });
    // A non-admin naming another owner sees what it may see of theirs: nothing.
    expect(await list('ada', '?owner=key:bob')).toEqual({ ids: [], next: null });
    expect(await list('ada', '?owner=key:ada')).toEqual({ ids: [a3, a2, a1], next: null });

    expect(await list('admin')).toEqual({ ids: [a3, w1, a2, b1, a1], next: null });
    expect(await list('admin', '?owner=key:bob')).toEqual({ ids: [b1], next: null });
    expect(await list('admin', '?owner=webhook:stripe')).toEqual({ ids: [w1], next: null });
    expect(await list('local')).toEqual({ ids: [a3, w1, a2, b1, a1], next: null });
  });

  it('GET /jobs?owner= is checked: empty or too long is a 400 naming the field', async () => {
    await start();
    for (const owner of ['', 'k'.repeat(513)]) {
      const res = await h.app.inject({ url: `/jobs?owner=${owner}`, headers: as('admin') });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ code: 'invalid_payload' });
      expect(res.json().detail).toContain('owner');
    }
  });

  it('GET /jobs/:id/events (a real socket): a stranger gets the 404 of an unknown id; the owner gets the stream', async () => {
    await start();
    const base = await listen(h.app);
    const id = await h.jobs.enqueue('quick', {}, { owner: 'key:ada' });
    await untilEvents(h.store, id, 2);

    const stranger = await fetch(`${base}/jobs/${id}/events`, { headers: as('bob') });
    expect(stranger.status).toBe(404);
    expect(await stranger.json()).toEqual(missing(id, `/jobs/${id}/events`));
    const unknown = await fetch(`${base}/jobs/job_missing/events`, { headers: as('bob') });
    expect(unknown.status).toBe(404);
    expect(stranger.headers.get('content-type')).toBe(unknown.headers.get('content-type'));
    await unknown.text();

    const owner = await fetch(`${base}/jobs/${id}/events`, { headers: as('ada') });
    expect(owner.status).toBe(200);
    const frames = await new SseReader(owner).rest();
    expect(frames.map((frame) => frame.event)).toEqual(['job.started', 'job.completed']);
  });
});
