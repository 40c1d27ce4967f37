import { fastify } from 'fastify';
import { describe, expect, it } from 'vitest';
import { OptionsError } from '../../core/index.js';
import { createDashboard } from './dashboard.js';
import { keyAdminRoutes } from './keys.js';

/** The OptionsError `make` throws (or its promise rejects with). */
async function optionsErrorOf(make: () => unknown): Promise<OptionsError> {
  try {
    await make();
  } catch (error) {
    expect(error).toBeInstanceOf(OptionsError);
    return error as OptionsError;
  }
  throw new Error('expected an OptionsError');
}

describe('dashboard options', () => {
  it('createDashboard reports every bad option at once, before subscribing to anything', async () => {
    const e = await optionsErrorOf(() =>
      createDashboard({
        auth: {} as never,
        jobs: {} as never,
        store: {} as never,
        operations: {} as never,
        upstreams: 'gift' as never,
        webRoot: '',
        reconcileWaitMs: 30_001,
        clock: { now: () => 0 } as never,
      }),
    );
    expect([e.code, e.owner, e.problems.map((p) => p.option)]).toEqual([
      'invalid_options',
      'createDashboard',
      ['auth', 'upstreams', 'webRoot', 'reconcileWaitMs', 'clock'],
    ]);
    expect(e.message).toBe(
      "createDashboard: auth must be an AdminAuth (createAdminAuth), got an object; upstreams must be an array of upstreams, got 'gift'; " +
        "webRoot must be a non-empty string, got ''; reconcileWaitMs must be an integer in [0, 30000], got 30001; " +
        'clock must be a Clock with now(), setTimeout() and clearTimeout(), got an object',
    );
  });

  it('keyAdminRoutes reports every bad option at once', async () => {
    const app = fastify();
    try {
      const e = await optionsErrorOf(() =>
        keyAdminRoutes(app, { keys: {} as never, auth: {} as never, clock: {} as never, bodyLimitBytes: 0 }),
      );
      expect([e.owner, e.message]).toEqual([
        'keyAdminRoutes',
        'keyAdminRoutes: clock must be a Clock with now(), setTimeout() and clearTimeout(), got an object; ' +
          'bodyLimitBytes must be an integer >= 1, got 0',
      ]);
    } finally {
      await app.close();
    }
  });
});
