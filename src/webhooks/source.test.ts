import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineWebhookSource, WEBHOOK_SOURCE_DEFAULTS } from './source.js';
import { githubVerifier, hmacVerifier, standardWebhooksVerifier, stripeVerifier } from './verifiers/index.js';
import { optionsErrorOf } from '../../test/support/options.js';

const stripe = stripeVerifier({ secrets: ['whsec_test'] });
const github = githubVerifier({ secrets: ["It's a Secret to Everybody"] });
const standard = standardWebhooksVerifier({ secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] });
const hmac = hmacVerifier({ secrets: ['s3cret'], header: 'x-signature', eventIdHeader: 'x-event-id' });

describe('defineWebhookSource', () => {
  it('applies the defaults', () => {
    const source = defineWebhookSource({ name: 'payments', verifier: stripe });
    expect(source).toMatchObject({
      name: 'payments',
      maxBodyBytes: 1_048_576,
      rateLimit: undefined,
      maxBacklog: undefined,
      backlogRetryAfterMs: 30_000,
      concurrency: 4,
      orderingKey: undefined,
      schema: undefined,
    });
    expect(WEBHOOK_SOURCE_DEFAULTS.maxBodyBytes).toBe(1024 * 1024);
    expect(Object.isFrozen(source)).toBe(true);
  });

  it('reads Stripe events from the body: id, type, created in seconds', () => {
    const source = defineWebhookSource({ name: 'payments', verifier: stripe });
    const event = { id: 'evt_1', type: 'payment_intent.succeeded', created: 1_767_225_600 };
    const info = { headers: {}, verified: { timestampMs: 1 } };
    expect(source.eventId(event, info)).toBe('evt_1');
    expect(source.eventType(event, info)).toBe('payment_intent.succeeded');
    expect(source.occurredAt(event, info)).toBe(1_767_225_600_000);
    expect(source.occurredAt({ created: 'yesterday' }, info)).toBeNull();
    expect(source.eventId([1, 2], info)).toBeUndefined();
  });

  it('reads GitHub events from the headers', () => {
    const source = defineWebhookSource({ name: 'gh', verifier: github });
    const info = {
      headers: { 'x-github-delivery': 'd-72d3162e', 'x-github-event': 'issues' },
      verified: {},
    };
    expect(source.eventId({ id: 'not this' }, info)).toBe('d-72d3162e');
    expect(source.eventType({ action: 'opened' }, info)).toBe('issues');
    expect(source.occurredAt({}, info)).toBeNull();
    // The verifier's id wins over the header (it is what was checked).
    expect(source.eventId({}, { ...info, verified: { eventId: 'from-verifier' } })).toBe('from-verifier');
  });

  it('reads Standard Webhooks events: webhook-id, body.type, body.timestamp else the signed time', () => {
    const source = defineWebhookSource({ name: 'std', verifier: standard });
    const info = { headers: { 'webhook-id': 'msg_1' }, verified: { eventId: 'msg_1', timestampMs: 5_000 } };
    const event = { type: 'invoice.paid', timestamp: '2026-01-01T00:00:01.500Z' };
    expect(source.eventId(event, info)).toBe('msg_1');
    expect(source.eventType(event, info)).toBe('invoice.paid');
    expect(source.occurredAt(event, info)).toBe(Date.UTC(2026, 0, 1, 0, 0, 1, 500));
    expect(source.occurredAt({ type: 'x' }, info)).toBe(5_000);
  });

  it('reads generic HMAC events: the id header the verifier saw, else body.id; the signed time', () => {
    const source = defineWebhookSource({ name: 'acme', verifier: hmac });
    expect(source.eventId({ id: 'b-1' }, { headers: {}, verified: { eventId: 'h-1' } })).toBe('h-1');
    expect(source.eventId({ id: 'b-1' }, { headers: {}, verified: {} })).toBe('b-1');
    expect(source.occurredAt({}, { headers: {}, verified: { timestampMs: 42_000 } })).toBe(42_000);
    expect(source.occurredAt({}, { headers: {}, verified: {} })).toBeNull();
  });

  it('takes readers, schema and ordering key of its own', () => {
    const schema = z.object({ ref: z.string(), kind: z.string() });
    const source = defineWebhookSource({
      name: 'shop',
      verifier: hmac,
      schema,
      eventId: (e) => e.ref,
      eventType: (e) => e.kind,
      orderingKey: (e) => `order:${e.ref}`,
    });
    const info = { headers: {}, verified: {} };
    expect(source.eventId({ ref: 'r1', kind: 'k' }, info)).toBe('r1');
    expect(source.orderingKey!({ ref: 'r1', kind: 'k' }, { eventId: 'r1', eventType: 'k' })).toBe('order:r1');
    expect(source.schema).toBe(schema);
  });

  it('maps the rate limit onto a policy algorithm, token bucket by default', () => {
    const bucket = defineWebhookSource({
      name: 'a',
      verifier: stripe,
      rateLimit: { limit: 100, windowMs: 1000 },
    });
    expect(bucket.rateLimit).toEqual({
      type: 'token_bucket',
      capacity: 100,
      refillTokens: 100,
      refillIntervalMs: 1000,
    });
    const fixed = defineWebhookSource({
      name: 'b',
      verifier: stripe,
      rateLimit: { limit: 5, windowMs: 60_000, algorithm: 'fixed_window' },
    });
    expect(fixed.rateLimit).toEqual({ type: 'fixed_window', limit: 5, windowMs: 60_000 });
  });

  it('names the source and the option when one is invalid', () => {
    expect(() => defineWebhookSource({ name: 'Payments!', verifier: stripe })).toThrow(
      /defineWebhookSource: name must be 1\.\.64 of a-z/,
    );
    expect(() => defineWebhookSource({ name: 'p', verifier: {} as never })).toThrow(
      'defineWebhookSource(p): verifier must be a WebhookVerifier with verify(), got an object',
    );
    expect(() => defineWebhookSource({ name: 'p', verifier: stripe, maxBodyBytes: 0 })).toThrow(
      'defineWebhookSource(p): maxBodyBytes must be an integer >= 1, got 0',
    );
    expect(() =>
      defineWebhookSource({ name: 'p', verifier: stripe, rateLimit: { limit: 1, windowMs: 0 } }),
    ).toThrow('defineWebhookSource(p): rateLimit.windowMs must be an integer >= 1, got 0');
    expect(() =>
      defineWebhookSource({
        name: 'p',
        verifier: stripe,
        rateLimit: { limit: 1, windowMs: 1, algorithm: 'leaky' as never },
      }),
    ).toThrow(/rateLimit\.algorithm must be 'token_bucket', 'fixed_window' or 'sliding_window'/);
    expect(() => defineWebhookSource({ name: 'p', verifier: stripe, maxBacklog: -1 })).toThrow(
      /maxBacklog must be an integer >= 1/,
    );
    expect(() => defineWebhookSource({ name: 'p', verifier: stripe, backlogRetryAfterMs: 500 })).toThrow(
      /backlogRetryAfterMs must be an integer >= 1000/,
    );
    expect(() => defineWebhookSource({ name: 'p', verifier: stripe, schema: {} as never })).toThrow(
      /schema must be a schema with safeParse/,
    );
    expect(() => defineWebhookSource({ name: 'p', verifier: stripe, eventId: 'id' as never })).toThrow(
      /eventId must be a function/,
    );
  });

  it('reports every bad option at once, in one OptionsError naming the source', () => {
    const error = optionsErrorOf(() =>
      defineWebhookSource({
        name: 'p',
        verifier: stripe,
        maxBodyBytes: 0,
        rateLimit: { limit: 1.5, windowMs: 1, algorithm: 'leaky' as never },
        concurrency: 'x' as never,
      }),
    );
    expect(error.message).toBe(
      'defineWebhookSource(p): maxBodyBytes must be an integer >= 1, got 0; ' +
        'rateLimit.limit must be an integer >= 1, got 1.5; ' +
        "rateLimit.algorithm must be 'token_bucket', 'fixed_window' or 'sliding_window', got 'leaky'; " +
        "concurrency must be an integer >= 1, got 'x'",
    );
    expect(error.code).toBe('invalid_options');
    expect(error.owner).toBe('defineWebhookSource(p)');
    expect(error.problems).toEqual([
      { option: 'maxBodyBytes', rule: 'an integer >= 1', value: 0 },
      { option: 'rateLimit.limit', rule: 'an integer >= 1', value: 1.5 },
      {
        option: 'rateLimit.algorithm',
        rule: "'token_bucket', 'fixed_window' or 'sliding_window'",
        value: 'leaky',
      },
      { option: 'concurrency', rule: 'an integer >= 1', value: 'x' },
    ]);
  });

  it('names the factory alone when the name itself is bad, with the other problems', () => {
    expect(() => defineWebhookSource({ name: '', verifier: undefined as never })).toThrow(
      new RangeError(
        "defineWebhookSource: name must be 1..64 of a-z, 0-9, _ and -, starting with a letter or digit, got ''; " +
          'verifier must be a WebhookVerifier with verify(), got undefined',
      ),
    );
  });
});
