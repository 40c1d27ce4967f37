import { describe, expect, it } from 'vitest';
import { createAiGateway, type AiGatewayOptions } from './index.js';
import { optionsErrorOf } from '../../test/support/options.js';

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
    expect(error({ maxReservedShare: 0 })).toBe(
      'createAiGateway: maxReservedShare must be a number > 0, got 0',
    );
    expect(error({ maxReservedShare: 1.5 })).toBe(
      'createAiGateway: maxReservedShare must be a number <= 1, got 1.5',
    );
    const rule = { name: 's', budgetUsd: 1, windowMs: 1000, scope: { by: 'provider' as const } };
    expect(error({ spendRules: [{ ...rule, window: 'rolling' as 'sliding' }] })).toBe(
      "createAiGateway: spendRules.0.window must be 'fixed' or 'sliding', got 'rolling'",
    );
    expect(
      error({
        rateRules: [
          { name: 'r', limit: 1, windowMs: 1000, technique: 'fixed', scope: { by: 'principal', key: 'k' } },
        ],
      }),
    ).toBe(
      "createAiGateway: rateRules.0.scope must be valid (key is required with by: 'metadata' and not " +
        'allowed otherwise), got an object',
    );
    const gateway = createAiGateway({
      ...base,
      maxReservedShare: 1,
      spendRules: [{ ...rule, window: 'sliding', scope: { by: 'principal' } }],
    });
    void gateway.close();
  });

  it('names the bad option', () => {
    expect(error({ providers: {} })).toBe(
      'createAiGateway: providers must be an object naming at least one provider, got an object',
    );
    expect(error({ providers: { 'a b': { baseUrl: 'http://x' } } })).toBe(
      "createAiGateway: providers.a b must be 1 to 64 of A-Z a-z 0-9 . _ -, got 'a b'",
    );
    expect(error({ providers: { p: { baseUrl: 'ftp://x' } } })).toBe(
      "createAiGateway: providers.p.baseUrl must be an http(s) URL without query or fragment, got 'ftp://x'",
    );
    expect(error({ providers: { p: { baseUrl: 'http://x', maxConnections: 0 } } })).toBe(
      'createAiGateway: providers.p.maxConnections must be a number >= 1, got 0',
    );
    expect(error({ defaults: { maxAttempts: 6 } })).toBe(
      'createAiGateway: defaults.maxAttempts must be a number <= 5, got 6',
    );
    expect(error({ defaults: { retryDelayMs: 5001 } })).toBe(
      'createAiGateway: defaults.retryDelayMs must be a number <= 5000, got 5001',
    );
    expect(error({ answerTimeoutMs: 0 })).toBe(
      'createAiGateway: answerTimeoutMs must be a number >= 1, got 0',
    );
    expect(error({ answerTimeoutMs: 1.5 })).toBe(
      'createAiGateway: answerTimeoutMs must be an integer, got 1.5',
    );
    expect(error({ spendRules: [{ name: 's', budgetUsd: 0, windowMs: 1, scope: { by: 'provider' } }] })).toBe(
      'createAiGateway: spendRules.0.budgetUsd must be a number > 0, got 0',
    );
    expect(
      error({
        rateRules: [{ name: 'r', limit: 1, windowMs: 1, technique: 'fixed', scope: { by: 'metadata' } }],
      }),
    ).toBe(
      "createAiGateway: rateRules.0.scope must be valid (key is required with by: 'metadata' and not " +
        'allowed otherwise), got an object',
    );
    expect(
      error({
        rateRules: [
          { name: 'r', limit: 1, windowMs: 1, technique: 'fixed', scope: { by: 'provider', key: 'k' } },
        ],
      }),
    ).toBe(
      "createAiGateway: rateRules.0.scope must be valid (key is required with by: 'metadata' and not " +
        'allowed otherwise), got an object',
    );
    const rule = {
      name: 'dup',
      limit: 1,
      windowMs: 1,
      technique: 'fixed' as const,
      scope: { by: 'provider' as const },
    };
    expect(error({ rateRules: [rule, rule] })).toBe(
      "createAiGateway: rateRules.1.name must be a name no other rule has, got 'dup'",
    );
    const spend = Array.from({ length: 21 }, (_, i) => ({
      name: `s${i}`,
      budgetUsd: 1,
      windowMs: 1,
      scope: { by: 'provider' as const },
    }));
    expect(error({ spendRules: spend })).toBe(
      'createAiGateway: spendRules must be a list of at most 20 entries, got an array of 21',
    );
    expect(error({ prices: { 'nope/m': { inputPerMTok: 1, outputPerMTok: 1 } } })).toBe(
      "createAiGateway: prices.nope/m must be the price of a configured provider, got 'nope/m'",
    );
    expect(error({ models: { 'nope/m': { endpoints: ['embeddings'] } } })).toBe(
      "createAiGateway: models.nope/m must be a model of a configured provider, got 'nope/m'",
    );
    expect(error({ models: { 'p/m': { endpoints: [] } } })).toMatch(
      /^createAiGateway: models\.p\/m\.endpoints /,
    );
    expect(error({ models: { 'p/m': { endpoints: ['chat', 'chat'] } } })).toMatch(
      /must name each endpoint once/,
    );
    expect(error({ models: { 'p/m': { endpoints: ['images' as never] } } })).toMatch(
      /models\.p\/m\.endpoints\.0/,
    );
    expect(error({ surprise: true } as Partial<AiGatewayOptions>)).toBe(
      'createAiGateway: surprise must be left out (not an option), got true',
    );
    expect(error({ logger: {} as never })).toBe(
      'createAiGateway: logger must be an object with an info(line, message) method, got an object',
    );
  });

  it('reads keys from the environment at startup, naming the variable and never a value', () => {
    const message = error({
      providers: { p: { baseUrl: 'http://x/v1', apiKeyEnv: 'MISSING_KEY' } },
      env: {},
    });
    expect(message).toBe(
      "createAiGateway: providers.p.apiKeyEnv must be the name of an environment variable that is set, got 'MISSING_KEY'",
    );
    const gateway = createAiGateway({
      providers: { p: { baseUrl: 'http://x/v1', apiKeyEnv: 'K' } },
      env: { K: 'sk-secret' },
    });
    expect(gateway.context.providers.get('p')?.headers.authorization).toBe('Bearer sk-secret');
    expect(gateway.context.providers.get('p')?.completionsPath).toBe('/v1/chat/completions');
    void gateway.close();
  });

  it('reports every bad option at once, as an OptionsError naming createAiGateway', () => {
    const e = optionsErrorOf(() =>
      createAiGateway({
        providers: { p: { baseUrl: 'ftp://x', apiKeyEnv: 'MISSING_KEY', headers: { 'a b': 'x' } } },
        prices: { 'nope/m': { inputPerMTok: 1, outputPerMTok: 1 } },
        rateRules: [
          { name: 'r', limit: 0.5, windowMs: 1000, technique: 'fixed', scope: { by: 'provider' } },
          { name: 'r', limit: 1, windowMs: 1000, technique: 'x' as never, scope: { by: 'provider' } },
        ],
        answerTimeoutMs: 0,
        logger: {} as never,
        random: 1 as never,
        env: {},
      }),
    );
    expect([e.code, e.owner]).toEqual(['invalid_options', 'createAiGateway']);
    expect(e.problems).toEqual([
      { option: 'providers.p.headers.a b', rule: 'an HTTP header name', value: 'a b' },
      { option: 'rateRules.0.limit', rule: 'an integer', value: 0.5 },
      { option: 'rateRules.1.technique', rule: "'fixed' or 'sliding'", value: 'x' },
      { option: 'answerTimeoutMs', rule: 'a number >= 1', value: 0 },
      { option: 'rateRules.1.name', rule: 'a name no other rule has', value: 'r' },
      { option: 'logger', rule: 'an object with an info(line, message) method', value: {} },
      { option: 'random', rule: 'a function', value: 1 },
    ]);
    expect(e.message).toBe(
      "createAiGateway: providers.p.headers.a b must be an HTTP header name, got 'a b'; rateRules.0.limit " +
        "must be an integer, got 0.5; rateRules.1.technique must be 'fixed' or 'sliding', got 'x'; " +
        'answerTimeoutMs must be a number >= 1, got 0; rateRules.1.name must be a name no other rule has, ' +
        "got 'r'; logger must be an object with an info(line, message) method, got an object; random must " +
        'be a function, got 1',
    );
    // Once the data is valid, the providers and prices are judged too, together.
    expect(() =>
      createAiGateway({
        providers: { p: { baseUrl: 'ftp://x', apiKeyEnv: 'MISSING_KEY' } },
        prices: { 'nope/m': { inputPerMTok: 1, outputPerMTok: 1 } },
        env: {},
      }),
    ).toThrow(
      new RangeError(
        "createAiGateway: providers.p.baseUrl must be an http(s) URL without query or fragment, got 'ftp://x'; " +
          "providers.p.apiKeyEnv must be the name of an environment variable that is set, got 'MISSING_KEY'; " +
          "prices.nope/m must be the price of a configured provider, got 'nope/m'",
      ),
    );
  });
});
