import { describe, expect, it } from 'vitest';
import { createWebhookIngress } from './ingress.js';
import type { WebhookInboxStore } from './ports.js';
import { defineWebhookSource } from './source.js';
import { stripeVerifier } from './verifiers/index.js';
import { expectOptionsError } from '../../test/support/options.js';

const store = {
  acceptWebhook: () => Promise.reject(new Error('not used')),
  getWebhook: () => Promise.reject(new Error('not used')),
  webhookBacklog: () => Promise.resolve(0),
} as unknown as WebhookInboxStore;
const payments = defineWebhookSource({
  name: 'payments',
  verifier: stripeVerifier({ secrets: ['whsec_test'] }),
});

describe('createWebhookIngress options', () => {
  it('accepts a store and sources, the rest defaulted', () => {
    const ingress = createWebhookIngress({ store, sources: [payments] });
    expect(ingress.store).toBe(store);
  });

  it('reports every bad option at once, in one OptionsError', () => {
    expectOptionsError(
      () =>
        createWebhookIngress({
          store: {} as never,
          sources: [payments, payments],
          backlogCacheMs: 0,
          admin: 'yes' as never,
          clock: {} as never,
        }),
      {
        owner: 'createWebhookIngress',
        options: ['store', 'backlogCacheMs', 'admin', 'clock', 'sources'],
        message:
          'createWebhookIngress: store must be a store with the webhook inbox (acceptWebhook, getWebhook, …), got an object; ' +
          'backlogCacheMs must be an integer >= 1, got 0; ' +
          "admin must be a boolean, got 'yes'; " +
          'clock must be a Clock with now(), setTimeout() and clearTimeout(), got an object; ' +
          "sources must be sources with distinct names, got 'two named payments'",
      },
    );
  });

  it('refuses a source not made by defineWebhookSource and a non-array of sources', () => {
    expect(() => createWebhookIngress({ store, sources: [{ name: 'x' } as never] })).toThrow(
      new RangeError(
        'createWebhookIngress: sources must be sources made by defineWebhookSource, got an object',
      ),
    );
    expect(() => createWebhookIngress({ store, sources: 'payments' as never })).toThrow(
      new RangeError("createWebhookIngress: sources must be an array of sources, got 'payments'"),
    );
  });
});
