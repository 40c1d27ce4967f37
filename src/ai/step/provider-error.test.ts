import { describe, expect, it } from 'vitest';
import { BreakwaterError } from '../../core/index.js';
import { ProviderRegistry } from '../providers.js';
import { ProviderHttpError, providerFailure } from './provider-error.js';

const registry = new ProviderRegistry(
  { p: { baseUrl: 'http://127.0.0.1:1/v1', apiKeyEnv: 'K' } },
  { K: 'sk-live-123' },
);
const provider = registry.get('p')!;

describe('providerFailure', () => {
  it("passes a request error's message on, scrubbed of the key", () => {
    const e = providerFailure(
      new ProviderHttpError(
        400,
        {},
        {
          message: 'temperature is invalid (key sk-live-123)',
          type: 'invalid_request_error',
          param: 'temperature',
        },
      ),
      provider,
    );
    expect(e.code).toBe('upstream_error');
    expect(e.status).toBe(400);
    expect(e.message).toBe('The provider p rejected the request: temperature is invalid (key [redacted])');
    expect(e.details).toEqual({
      provider: 'p',
      provider_status: 400,
      provider_type: 'invalid_request_error',
      provider_param: 'temperature',
    });
  });

  it('says nothing of the provider text for a refused key, and keeps the retry hint of a 429', () => {
    const refused = providerFailure(
      new ProviderHttpError(401, {}, { message: 'bad key sk-live-123' }),
      provider,
    );
    expect([refused.status, refused.message]).toEqual([
      502,
      "The provider p refused the gateway's credentials (HTTP 401).",
    ]);
    const limited = providerFailure(new ProviderHttpError(429, { 'retry-after': '12' }, undefined), provider);
    expect([limited.code, limited.status, limited.retryAfterMs]).toEqual([
      'upstream_unavailable',
      503,
      12_000,
    ]);
  });

  it('maps network failures and keeps our own errors', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED'), {
      code: 'ECONNREFUSED',
      syscall: 'connect',
    });
    expect(providerFailure(refused, provider).code).toBe('upstream_unavailable');
    const own = new BreakwaterError('rate_limited');
    expect(providerFailure(own, provider)).toBe(own);
  });
});
