import { afterEach, describe, expect, it, vi } from 'vitest';
import { SERVER_DEFAULTS } from './options.js';
import { parseLastEventId } from './sse.js';
import { SseReader, harness, listen, untilEvents, type Frame, type Harness } from './test-support.js';

const seqs = (frames: Frame[]): number[] => frames.map((f) => Number(f.id));

describe('GET /jobs/:id/events (SSE over a real socket)', () => {
  let h: Harness;
  let base: string;
  const clients: AbortController[] = [];

  const connect = async (path: string, headers: Record<string, string> = {}) => {
    const client = new AbortController();
    clients.push(client);
    const res = await fetch(`${base}${path}`, { headers, signal: client.signal });
    return { res, client, reader: new SseReader(res) };
  };

  afterEach(async () => {
    for (const client of clients.splice(0)) client.abort();
    await h.close();
  });

  it('replays stored events, follows live ones and ends the stream after the terminal event', async () => {
    h = await harness();
    base = await listen(h.app);
    const id = await h.jobs.enqueue('steps', {});
    await untilEvents(h.store, id, 2);

    const { res, reader } = await connect(`/jobs/${id}/events`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache, no-transform');
    const replayed = await reader.events(2);
    expect(replayed.map((f) => [Number(f.id), f.event])).toEqual([
      [1, 'job.started'],
      [2, 'job.progress'],
    ]);
    expect(JSON.parse(replayed[1]!.data!)).toEqual({
      event_id: `${id}:2`,
      seq: 2,
      type: 'job.progress',
      job_id: id,
      timestamp: '2026-01-01T00:00:00.000Z',
      payload: { step: 1, total: 3, message: 'one' },
    });

    h.gates[0].open();
    const middle = await reader.events(2);
    expect(middle.map((f) => [Number(f.id), f.event])).toEqual([
      [3, 'job.partial'],
      [4, 'job.progress'],
    ]);
    h.gates[1].open();
    const last = await reader.events(2);
    expect(last.map((f) => [Number(f.id), f.event])).toEqual([
      [5, 'job.progress'],
      [6, 'job.completed'],
    ]);
    expect(JSON.parse(last[1]!.data!).payload).toEqual({ result: { ok: true } });
    expect(await reader.rest()).toEqual([]);
    expect(reader.ended).toBe(true);
    await vi.waitFor(() => expect(h.liveSubscriptions()).toBe(0));
  });

  it('resumes from Last-Event-ID without gaps or duplicates, across a disconnect mid-job', async () => {
    h = await harness();
    base = await listen(h.app);
    const id = await h.jobs.enqueue('steps', {});
    await untilEvents(h.store, id, 2);

    const first = await connect(`/jobs/${id}/events`);
    h.gates[0].open();
    const seen = await first.reader.events(3);
    expect(seqs(seen)).toEqual([1, 2, 3]);
    first.client.abort();
    await vi.waitFor(() => expect(h.liveSubscriptions()).toBe(0));

    // Event 4 (and maybe more) is written while nobody listens.
    await untilEvents(h.store, id, 4);
    const second = await connect(`/jobs/${id}/events`, { 'last-event-id': seen.at(-1)!.id! });
    expect(second.res.status).toBe(200);
    const resumed = await second.reader.events(1);
    h.gates[1].open();
    const rest = (await second.reader.rest()).filter((f) => f.id !== undefined);
    expect([...seqs(seen), ...seqs(resumed), ...seqs(rest)]).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('takes ?last_event_id= for the first connection, and the Last-Event-ID header over it', async () => {
    h = await harness();
    base = await listen(h.app);
    const id = await h.jobs.enqueue('quick', {});
    await untilEvents(h.store, id, 2);

    const byQuery = await connect(`/jobs/${id}/events?last_event_id=1`);
    expect(seqs((await byQuery.reader.rest()).filter((f) => f.id !== undefined))).toEqual([2]);

    // An EventSource reconnects to the same URL (query included) and sends the newer id as a header.
    const both = await connect(`/jobs/${id}/events?last_event_id=0`, { 'last-event-id': '1' });
    expect(seqs((await both.reader.rest()).filter((f) => f.id !== undefined))).toEqual([2]);
  });

  it('replays a finished job in full, and answers 204 once nothing is left after Last-Event-ID', async () => {
    h = await harness();
    base = await listen(h.app);
    const id = await h.jobs.enqueue('quick', {});
    await untilEvents(h.store, id, 2);

    const all = await connect(`/jobs/${id}/events`);
    const frames = await all.reader.rest();
    expect(frames.map((f) => [Number(f.id), f.event])).toEqual([
      [1, 'job.started'],
      [2, 'job.completed'],
    ]);

    // 204 tells an EventSource to stop reconnecting (WHATWG HTML, server-sent events).
    const done = await connect(`/jobs/${id}/events`, { 'last-event-id': '2' });
    expect(done.res.status).toBe(204);
    expect(await done.reader.rest()).toEqual([]);
    await vi.waitFor(() => expect(h.liveSubscriptions()).toBe(0));
  });

  it('sends a keep-alive comment after keepAliveMs of silence, re-armed by each write', async () => {
    h = await harness({ keepAliveMs: 15_000 });
    base = await listen(h.app);
    const id = await h.jobs.enqueue('steps', {});
    await untilEvents(h.store, id, 2);
    const { reader } = await connect(`/jobs/${id}/events`);
    expect(seqs(await reader.events(2))).toEqual([1, 2]);

    expect(h.clock.pendingTimers()).toBe(1);
    h.clock.tick(15_000);
    expect(await reader.next()).toEqual({ comments: ['keep-alive'] });
    h.clock.tick(15_000);
    expect(await reader.next()).toEqual({ comments: ['keep-alive'] });

    // An event re-arms the timer: 14 999 ms after it, nothing is due yet.
    h.gates[0].open();
    expect(seqs(await reader.events(2))).toEqual([3, 4]);
    h.clock.tick(14_999);
    h.gates[1].open();
    // Read frame by frame: a keep-alive comment here would be a frame of its own.
    const after = [await reader.next(), await reader.next()];
    expect(after.map((f) => [f?.id, f?.comments])).toEqual([
      ['5', []],
      ['6', []],
    ]);
    expect(await reader.rest()).toEqual([]);
    expect(h.clock.pendingTimers()).toBe(0);
  });

  it('releases the subscription and the keep-alive timer when the client disconnects', async () => {
    h = await harness();
    base = await listen(h.app);
    const id = await h.jobs.enqueue('steps', {});
    await untilEvents(h.store, id, 2);
    const { client, reader } = await connect(`/jobs/${id}/events`);
    await reader.events(2);
    expect(h.liveSubscriptions()).toBe(1);
    expect(h.clock.pendingTimers()).toBe(1);

    client.abort();
    await vi.waitFor(() => expect(h.liveSubscriptions()).toBe(0));
    expect(h.clock.pendingTimers()).toBe(0);
    // The job goes on without a listener, and a new client still gets everything.
    h.gates[0].open();
    h.gates[1].open();
    await untilEvents(h.store, id, 6);
    const again = await connect(`/jobs/${id}/events`);
    expect(seqs(await again.reader.rest())).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('answers 400 problem+json for a bad Last-Event-ID and 404 for an unknown job', async () => {
    h = await harness();
    const id = await h.jobs.enqueue('quick', {});
    const bad = await h.app.inject({
      url: `/jobs/${id}/events`,
      headers: { 'last-event-id': 'abc' },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(bad.json()).toMatchObject({ code: 'invalid_payload', field: 'Last-Event-ID' });

    const badQuery = await h.app.inject({ url: `/jobs/${id}/events?last_event_id=-1` });
    expect(badQuery.statusCode).toBe(400);
    expect(badQuery.json()).toMatchObject({ code: 'invalid_payload', field: 'last_event_id' });

    const missing = await h.app.inject({ url: '/jobs/job_nope/events' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({
      code: 'not_found',
      detail: 'There is no job job_nope.',
      instance: '/jobs/job_nope/events',
    });
    // No HEAD: it would hold a stream open that never sends a body.
    const head = await h.app.inject({ method: 'HEAD', url: `/jobs/${id}/events` });
    expect(head.statusCode).toBe(404);
    expect(h.liveSubscriptions()).toBe(0);
  });
});

describe('parseLastEventId', () => {
  it('reads the header first, then the query; empty or absent means 0', () => {
    expect(parseLastEventId('7', '3')).toBe(7);
    expect(parseLastEventId(undefined, '3')).toBe(3);
    expect(parseLastEventId('', '3')).toBe(3);
    expect(parseLastEventId(undefined, undefined)).toBe(0);
    expect(parseLastEventId(['9', '1'], undefined)).toBe(9);
  });

  it('rejects anything but a safe whole number with invalid_payload', () => {
    for (const bad of ['1.5', '-1', '1e3', 'job_x:3', '99999999999999999']) {
      expect(() => parseLastEventId(bad, undefined)).toThrow(
        expect.objectContaining({ code: 'invalid_payload', status: 400 }),
      );
    }
  });

  it('keeps the default keep-alive at 15 s', () => {
    expect(SERVER_DEFAULTS.keepAliveMs).toBe(15_000);
  });
});
