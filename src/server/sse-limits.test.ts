import { afterEach, describe, expect, it } from 'vitest';
import { as, principalFromHeader } from '../../test/support/principals.js';
import { SERVER_DEFAULTS } from './options.js';
import { harness, listen, untilEvents, type Harness } from './test-support.js';

/**
 * SSE connections capped per principal, so one principal that exhausts its share leaves others unaffected,
 * over a real socket (the route hijacks its reply).
 */
describe('GET /jobs/:id/events: open streams capped per principal and in total', () => {
  let h: Harness;
  let base: string;
  const clients: AbortController[] = [];

  afterEach(async () => {
    for (const client of clients.splice(0)) client.abort();
    await (h as Harness | undefined)?.close();
    h = undefined as unknown as Harness;
  });

  /** Opens the events stream of `id` as `caller`; the response, and an abort that closes it. */
  async function open(id: string, caller: string): Promise<{ res: Response; close(): void }> {
    const client = new AbortController();
    clients.push(client);
    const res = await fetch(`${base}/jobs/${id}/events`, { headers: as(caller), signal: client.signal });
    return { res, close: () => client.abort() };
  }

  it('defaults: 16 streams per principal, 4 096 in all', () => {
    expect(SERVER_DEFAULTS.maxStreamsPerPrincipal).toBe(16);
    expect(SERVER_DEFAULTS.maxStreams).toBe(4_096);
  });

  it('a principal past its share gets 429 rate_limited with Retry-After; others still open streams', async () => {
    h = await harness({ maxStreamsPerPrincipal: 2, maxStreams: 3 });
    principalFromHeader(h.app);
    base = await listen(h.app);
    const adaJob = await h.jobs.enqueue('idle', {}, { owner: 'key:ada' });
    const bobJob = await h.jobs.enqueue('idle', {}, { owner: 'key:bob' });

    const first = await open(adaJob, 'ada');
    const second = await open(adaJob, 'ada');
    expect([first.res.status, second.res.status]).toEqual([200, 200]);
    const third = await open(adaJob, 'ada');
    expect(third.res.status).toBe(429);
    expect(third.res.headers.get('retry-after')).toBe('5');
    expect(await third.res.json()).toMatchObject({
      code: 'rate_limited',
      status: 429,
      detail:
        'Too many open event streams for this caller (2 of 2); close one, or try again in about 5 seconds.',
      retry_after_ms: 5_000,
    });

    // Ada's share is full; Bob's is not.
    const bob = await open(bobJob, 'bob');
    expect(bob.res.status).toBe(200);

    // The server's total (3) is reached: anyone's next stream gets 503 overloaded.
    const total = await open(bobJob, 'bob');
    expect(total.res.status).toBe(503);
    expect(total.res.headers.get('retry-after')).toBe('5');
    expect(await total.res.json()).toMatchObject({
      code: 'overloaded',
      detail: 'The server has too many open event streams (3); try again in about 5 seconds.',
    });

    // A closed stream gives its slot back to its principal (once the server has seen the close).
    first.close();
    expect(await openOnceFree(adaJob, 'ada')).toBe(200);
  });

  /**
   * The status of opening `id` as `caller`, retried for up to 5 s of real time while it is 429 or 503: a
   * slot comes back when the server sees the client's close, which crosses a real socket.
   */
  async function openOnceFree(id: string, caller: string): Promise<number> {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const { res } = await open(id, caller);
      if ((res.status !== 429 && res.status !== 503) || Date.now() > deadline) return res.status;
      await res.text();
      await new Promise<void>((resolve) => setTimeout(resolve, 10));
    }
  }

  it('a request answered without a stream (404, 204) keeps no slot', async () => {
    h = await harness({ maxStreamsPerPrincipal: 1, maxStreams: 1 });
    principalFromHeader(h.app);
    base = await listen(h.app);
    const pending = await h.jobs.enqueue('idle', {}, { owner: 'key:ada' });
    const done = await h.jobs.enqueue('quick', {}, { owner: 'key:ada' });
    await untilEvents(h.store, done, 2);
    for (let i = 0; i < 3; i++) {
      const stranger = await open(pending, 'bob');
      expect(stranger.res.status).toBe(404);
      await stranger.res.text();
      const client = new AbortController();
      clients.push(client);
      const finished = await fetch(`${base}/jobs/${done}/events`, {
        headers: { ...as('ada'), 'last-event-id': '2' },
        signal: client.signal,
      });
      expect(finished.status).toBe(204);
    }
    expect(await openOnceFree(pending, 'ada')).toBe(200);
    expect(await openOnceFree(pending, 'bob')).toBe(404);
  });
});
