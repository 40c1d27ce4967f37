/**
 * A query parameter given twice where one value is expected (`?source=a&source=b`: Fastify's parser makes it
 * an array) is a 400 naming the parameter, on every route of the GiftGenius gateway that reads a query;
 * parameters that take several values (`status`, `state`) take them. `GET /admin/webhooks?source=a&source=b`
 * answered 500.
 */
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { startBackends, startGiftGenius, tempDb, useCleanups } from '../e2e/support.js';

const defer = useCleanups();

/** Every route that reads a query, with each parameter that takes one value. */
const SINGLE_VALUED: readonly { method: 'GET' | 'POST'; path: string; params: readonly string[] }[] = [
  { method: 'GET', path: '/jobs', params: ['type', 'limit', 'before_id'] },
  { method: 'GET', path: '/jobs/job_x/events', params: ['last_event_id'] },
  { method: 'GET', path: '/admin/api/jobs', params: ['type', 'limit', 'before_id'] },
  { method: 'GET', path: '/admin/api/operations', params: ['action', 'limit', 'before_id'] },
  { method: 'POST', path: '/admin/api/operations/op_x/reconcile', params: ['wait_ms'] },
  { method: 'GET', path: '/admin/webhooks', params: ['source', 'limit', 'before_id'] },
];

/** A valid value of each parameter, so that only the repetition is wrong. */
const VALUE: Record<string, [string, string]> = {
  type: ['a', 'b'],
  action: ['a', 'b'],
  source: ['payments', 'other'],
  limit: ['1', '2'],
  before_id: ['x1', 'x2'],
  last_event_id: ['1', '2'],
  wait_ms: ['1', '2'],
};

describe('repeated query parameters', () => {
  it('one value expected: 400 invalid_payload naming the parameter, on every route; lists take several', async () => {
    const backends = await startBackends(defer);
    const gateway = await startGiftGenius(defer, backends, { dbPath: tempDb(defer) });
    const answers: Record<string, unknown> = {};
    const expected: Record<string, unknown> = {};
    for (const route of SINGLE_VALUED) {
      for (const param of route.params) {
        const [a, b] = VALUE[param]!;
        const target = `${route.method} ${route.path}?${param}=${a}&${param}=${b}`;
        const answer = await request(`${gateway.url}${route.path}?${param}=${a}&${param}=${b}`, {
          method: route.method,
        });
        const body = (await answer.body.json()) as Record<string, unknown>;
        answers[target] = {
          status: answer.statusCode,
          type: answer.headers['content-type'],
          code: body.code,
          detail: body.detail,
          reason: body.reason,
          parameter: body.parameter,
        };
        expected[target] = {
          status: 400,
          type: 'application/problem+json; charset=utf-8',
          code: 'invalid_payload',
          detail: `The query parameter ${param} was given 2 times; it takes one value.`,
          reason: 'repeated_parameter',
          parameter: param,
        };
      }
    }
    expect(answers).toEqual(expected);

    // Where several values make sense, they are taken.
    for (const [path, key] of [
      ['/jobs?status=pending&status=failed', 'jobs'],
      ['/admin/api/jobs?status=pending&status=failed', 'jobs'],
      ['/admin/api/operations?state=unknown&state=failed', 'operations'],
    ] as const) {
      const answer = await request(`${gateway.url}${path}`);
      expect(answer.statusCode, path).toBe(200);
      expect((await answer.body.json()) as Record<string, unknown>).toHaveProperty(key, []);
    }
    // And one value of each is fine.
    const one = await request(`${gateway.url}/admin/webhooks?source=payments&limit=5`);
    expect(one.statusCode).toBe(200);
    expect(await one.body.json()).toEqual({ webhooks: [], next_before_id: null });
  }, 30_000);
});
