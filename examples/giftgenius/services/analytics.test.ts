import { afterEach, describe, expect, it } from 'vitest';
import { startAnalyticsService } from './analytics.js';
import type { ServiceHandle } from './service.js';
import { call } from './testing.js';

let analytics: ServiceHandle | undefined;

afterEach(async () => {
  await analytics?.close();
  analytics = undefined;
});

async function start(maxEvents?: number): Promise<ServiceHandle> {
  analytics = await startAnalyticsService({ maxEvents });
  return analytics;
}

describe('analytics service', () => {
  it('accepts events with 202 and lists them newest first, up to limit', async () => {
    const s = await start();
    const first = await call('POST', `${s.url}/events`, { name: 'gift_suggested', properties: { count: 3 } });
    expect(first.status).toBe(202);
    expect(first.body).toEqual({ accepted: true, event_id: 'evt_000001' });
    await call('POST', `${s.url}/events`, { name: 'checkout_started' });
    await call('POST', `${s.url}/events`, { name: 'checkout_done', properties: { order_id: 'ord_000001' } });
    const listed = await call('GET', `${s.url}/events?limit=2`);
    expect(listed.status).toBe(200);
    expect(listed.body.total).toBe(3);
    expect(listed.body.events.map((e: { event_id: string; name: string }) => [e.event_id, e.name])).toEqual([
      ['evt_000003', 'checkout_done'],
      ['evt_000002', 'checkout_started'],
    ]);
    expect(listed.body.events[1].properties).toEqual({});
    const all = await call('GET', `${s.url}/events`);
    expect(all.body.events[2]).toMatchObject({ event_id: 'evt_000001', properties: { count: 3 } });
  });

  it('keeps only the newest maxEvents events but counts them all', async () => {
    const s = await start(2);
    for (const name of ['a', 'b', 'c', 'd']) await call('POST', `${s.url}/events`, { name });
    const listed = await call('GET', `${s.url}/events?limit=10`);
    expect(listed.body.events.map((e: { name: string }) => e.name)).toEqual(['d', 'c']);
    expect(listed.body.total).toBe(4);
  });

  it('answers 400 for a bad event or limit', async () => {
    const s = await start();
    const noName = await call('POST', `${s.url}/events`, { properties: {} });
    expect([noName.status, noName.body.detail]).toEqual([
      400,
      'name is required and must be a non-empty string.',
    ]);
    const listProps = await call('POST', `${s.url}/events`, { name: 'x', properties: [1] });
    expect(listProps.body.detail).toBe('properties must be a JSON object when given.');
    for (const limit of ['0', '1001', 'abc', '2.5']) {
      const answer = await call('GET', `${s.url}/events?limit=${limit}`);
      expect([answer.status, answer.body.detail]).toEqual([400, 'limit must be an integer from 1 to 1000.']);
    }
    expect(() => startAnalyticsService({ maxEvents: 0 })).toThrow(RangeError);
  });
});
