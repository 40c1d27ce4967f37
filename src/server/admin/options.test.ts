import { fastify } from 'fastify';
import { describe, expect, it } from 'vitest';
import { createDashboard } from './dashboard.js';
import { keyAdminRoutes } from './keys.js';
import { optionsRejectionOf, expectOptionsRejection } from '../../../test/support/options.js';

describe('dashboard options', () => {
  it('createDashboard reports every bad option at once, before subscribing to anything', async () => {
    await expectOptionsRejection(
      () =>
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
      {
        owner: 'createDashboard',
        options: ['auth', 'upstreams', 'webRoot', 'reconcileWaitMs', 'clock'],
        message:
          "createDashboard: auth must be an AdminAuth (createAdminAuth), got an object; upstreams must be an array of upstreams, got 'gift'; " +
          "webRoot must be a non-empty string, got ''; reconcileWaitMs must be an integer in [0, 30000], got 30001; " +
          'clock must be a Clock with now(), setTimeout() and clearTimeout(), got an object',
      },
    );
  });

  it('keyAdminRoutes reports every bad option at once', async () => {
    const app = fastify();
    try {
      const e = await optionsRejectionOf(() =>
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
