import { describe, expect, it } from 'vitest';
import { createAiGateway, type AiGatewayOptions } from './index.js';

const base: AiGatewayOptions = { providers: { openai: { baseUrl: 'http://127.0.0.1:1/v1' } } };

function error(options: Partial<AiGatewayOptions>): string {
  try {
    const gateway = createAiGateway({ ...base, ...options } as AiGatewayOptions);
    void gateway.close();
  } catch (e) {
    expect(e).toBeInstanceOf(RangeError);
    return (e as Error).message;
  }
  throw new Error('accepted');
}

describe('createAiGateway options', () => {
  it('accepts a full configuration and fills defaults', async () => {
    const gateway = createAiGateway({
      ...base,
      prices: { 'openai/gpt-4o': { inputPerMTok: 2.5, outputPerMTok: 10, cachedInputPerMTok: 1.25 } },
      rateRules: [
        { name: 'r', limit: 5, windowMs: 1000, technique: 'sliding', scope: { by: 'metadata', key: 'user' } },
      ],
      spendRules: [
        { name: 's', budgetUsd: 5, windowMs: 86_400_000, scope: { by: 'model', value: 'openai/gpt-4o' } },
      ],
      defaults: { maxAttempts: 2 },
    });
    expect(gateway.context.defaults).toEqual({
      timeoutMs: 60_000,
      maxAttempts: 2,
      retryDelayMs: 500,
      backoff: 'exponential',
    });
    expect(gateway.context.maxRetryDelayMs).toBe(5_000);
    await gateway.close();
  });

  it('maxReservedShare is a share in (0, 1]; spend rules take a fixed or sliding window; principal scopes take no key', () => {
    expect(error({ maxReservedShare: 0 })).toMatch(/^createAiGateway: maxReservedShare: /);
    expect(error({ maxReservedShare: 1.5 })).toMatch(/^createAiGateway: maxReservedShare: /);
    const rule = { name: 's', budgetUsd: 1, windowMs: 1000, scope: { by: 'provider' as const } };
    expect(error({ spendRules: [{ ...rule, window: 'rolling' as 'sliding' }] })).toMatch(
      /^createAiGateway: spendRules\.0\.window: /,
    );
    expect(
      error({
        rateRules: [
          { name: 'r', limit: 1, windowMs: 1000, technique: 'fixed', scope: { by: 'principal', key: 'k' } },
        ],
      }),
    ).toBe(
      "createAiGateway: rateRules.0.scope: key is required with by: 'metadata' and not allowed otherwise",
    );
    const gateway = createAiGateway({
      ...base,
      maxReservedShare: 1,
      spendRules: [{ ...rule, window: 'sliding', scope: { by: 'principal' } }],
    });
    void gateway.close();
  });

  it('names the bad option', () => {
    expect(error({ providers: {} })).toBe('createAiGateway: providers: must name at least one provider');
    expect(error({ providers: { 'a b': { baseUrl: 'http://x' } } })).toMatch(
      /^createAiGateway: providers\.a b: /,
    );
    expect(error({ providers: { p: { baseUrl: 'ftp://x' } } })).toBe(
      'createAiGateway: providers.p.baseUrl must be an http(s) URL without query or fragment',
    );
    expect(error({ providers: { p: { baseUrl: 'http://x', maxConnections: 0 } } })).toMatch(
      /^createAiGateway: providers\.p\.maxConnections: /,
    );
    expect(error({ defaults: { maxAttempts: 6 } })).toMatch(/^createAiGateway: defaults\.maxAttempts: /);
    expect(error({ defaults: { retryDelayMs: 5001 } })).toMatch(/^createAiGateway: defaults\.retryDelayMs: /);
    expect(error({ answerTimeoutMs: 0 })).toMatch(/^createAiGateway: answerTimeoutMs: /);
    expect(error({ answerTimeoutMs: 1.5 })).toMatch(/^createAiGateway: answerTimeoutMs: /);
    expect(
      error({ spendRules: [{ name: 's', budgetUsd: 0, windowMs: 1, scope: { by: 'provider' } }] }),
    ).toMatch(/^createAiGateway: spendRules\.0\.budgetUsd: /);
    expect(
      error({
        rateRules: [{ name: 'r', limit: 1, windowMs: 1, technique: 'fixed', scope: { by: 'metadata' } }],
      }),
    ).toBe(
      "createAiGateway: rateRules.0.scope: key is required with by: 'metadata' and not allowed otherwise",
    );
    expect(
      error({
        rateRules: [
          { name: 'r', limit: 1, windowMs: 1, technique: 'fixed', scope: { by: 'provider', key: 'k' } },
        ],
      }),
    ).toMatch(/^createAiGateway: rateRules\.0\.scope: /);
    const rule = {
      name: 'dup',
      limit: 1,
      windowMs: 1,
      technique: 'fixed' as const,
      scope: { by: 'provider' as const },
    };
    expect(error({ rateRules: [rule, rule] })).toBe('createAiGateway: rateRules: two rules are named "dup"');
    const spend = Array.from({ length: 21 }, (_, i) => ({
      name: `s${i}`,
      budgetUsd: 1,
      windowMs: 1,
      scope: { by: 'provider' as const },
    }));
    expect(error({ spendRules: spend })).toMatch(/^createAiGateway: spendRules: /);
    expect(error({ prices: { 'nope/m': { inputPerMTok: 1, outputPerMTok: 1 } } })).toBe(
      'createAiGateway: prices.nope/m: names no configured provider',
    );
    expect(error({ surprise: true } as Partial<AiGatewayOptions>)).toMatch(/^createAiGateway: options: /);
    expect(error({ logger: {} as never })).toBe(
      'createAiGateway: logger must have an info(line, message) method',
    );
  });

  it('reads keys from the environment at startup, naming the variable and never a value', () => {
    const message = error({
      providers: { p: { baseUrl: 'http://x/v1', apiKeyEnv: 'MISSING_KEY' } },
      env: {},
    });
    expect(message).toBe('createAiGateway: providers.p.apiKeyEnv names MISSING_KEY, which is not set');
    const gateway = createAiGateway({
      providers: { p: { baseUrl: 'http://x/v1', apiKeyEnv: 'K' } },
      env: { K: 'sk-secret' },
    });
    expect(gateway.context.providers.get('p')?.headers.authorization).toBe('Bearer sk-secret');
    expect(gateway.context.providers.get('p')?.completionsPath).toBe('/v1/chat/completions');
    void gateway.close();
  });
});
