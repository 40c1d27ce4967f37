import { afterEach, describe, expect, it } from 'vitest';
import { as, principalFromHeader } from '../../test/support/principals.js';
import { SIZE_SCHEMA, harness, untilEvents, type Harness } from './test-support.js';

describe('POST /jobs/:id/input answers the question of an input_required job', () => {
  let h: Harness;

  afterEach(async () => {
    await h.close();
  });

  it('GET shows the question; a stranger gets 404, a bad answer 400, both storing nothing; the owner answers', async () => {
    h = await harness();
    principalFromHeader(h.app);
    const id = await h.jobs.enqueue('ask', {}, { owner: 'key:ada' });
    await untilEvents(h.store, id, 2);
    const asked = (await h.store.events(id))[1]!.timestamp;

    const seen = await h.app.inject({ url: `/jobs/${id}`, headers: as('ada') });
    expect(seen.json()).toMatchObject({
      id,
      status: 'input_required',
      input_request: {
        key: '0',
        message: 'Which size?',
        schema: SIZE_SCHEMA,
        asked_at: new Date(asked).toISOString(),
        expires_at: null,
      },
    });

    const post = (caller: string, body: unknown) =>
      h.app.inject({
        method: 'POST',
        url: `/jobs/${id}/input`,
        headers: as(caller),
        payload: body as object,
      });
    const stranger = await post('bob', { key: '0', answer: { action: 'accept', content: { size: 'M' } } });
    expect([stranger.statusCode, stranger.json().code]).toEqual([404, 'not_found']);
    const bad = await post('ada', { key: '0', answer: { action: 'accept', content: { size: 'XL' } } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({
      code: 'invalid_payload',
      detail: "The answer does not fit the question's schema: size must be one of: S, M, L.",
    });
    const wrongKey = await post('ada', { key: 'size', answer: { action: 'accept', content: { size: 'M' } } });
    expect([wrongKey.statusCode, wrongKey.json().code]).toEqual([409, 'input_not_awaited']);
    expect((await h.jobs.get(id))!.status).toBe('input_required');

    const answered = await post('ada', { key: '0', answer: { action: 'accept', content: { size: 'M' } } });
    expect(answered.statusCode).toBe(200);
    expect(answered.json()).toMatchObject({ id, status: 'pending' });
    expect(answered.json().input_request).toBeUndefined();
    await untilEvents(h.store, id, 5);
    expect(await h.jobs.get(id)).toMatchObject({
      status: 'completed',
      result: { size: { action: 'accept', content: { size: 'M' } } },
    });
  });
});
