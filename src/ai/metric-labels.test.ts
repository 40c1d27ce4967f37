import { describe, expect, it } from 'vitest';
import { aiMetricLabels, type AiLabelConfig } from './metric-labels.js';
import type { AiRequestLog } from './types.js';

const CONFIG: AiLabelConfig = {
  providers: new Set(['openai', 'sim']),
  models: new Set(['openai/gpt-4o-mini', 'sim/sim-1']),
};

function line(fields: Partial<AiRequestLog>): AiRequestLog {
  return {
    request_id: 'r1',
    endpoint: 'chat',
    route: null,
    step: 'direct',
    provider: 'openai',
    model: 'gpt-4o-mini',
    stream: false,
    status: 200,
    outcome: 'ok',
    prompt_tokens: null,
    completion_tokens: null,
    cached_tokens: null,
    cost_usd: null,
    latency_ms: 1,
    first_byte_ms: 1,
    attempts: 1,
    failed_steps: [],
    ...fields,
  };
}

describe('aiMetricLabels', () => {
  it('a direct request to a priced model keeps its names', () => {
    expect(aiMetricLabels(line({}), CONFIG)).toEqual({
      route: 'direct',
      step: 'direct',
      provider: 'openai',
      model: 'gpt-4o-mini',
      outcome: 'ok',
    });
  });

  it('an unpriced model of a configured provider is _unknown; so is an unknown provider and its model', () => {
    expect(aiMetricLabels(line({ model: 'gpt-9' }), CONFIG)).toMatchObject({
      provider: 'openai',
      model: '_unknown',
    });
    // `sim/sim-1` is priced, but under another provider the same model string is not.
    expect(
      aiMetricLabels(line({ provider: 'evil', model: 'sim-1', outcome: 'unknown_provider' }), CONFIG),
    ).toEqual({
      route: 'direct',
      step: 'direct',
      provider: '_unknown',
      model: '_unknown',
      outcome: 'unknown_provider',
    });
    // A provider named like a priced pair's prefix does not make the model known.
    expect(aiMetricLabels(line({ provider: 'openai/gpt-4o', model: 'mini' }), CONFIG)).toMatchObject({
      provider: '_unknown',
      model: '_unknown',
    });
  });

  it('a request refused before any step: none; an undeployed route: route _unknown', () => {
    const refused = { step: null, provider: null, model: null, status: 400 };
    expect(aiMetricLabels(line({ ...refused, outcome: 'invalid_body' }), CONFIG)).toEqual({
      route: 'direct',
      step: 'none',
      provider: 'none',
      model: 'none',
      outcome: 'invalid_body',
    });
    expect(aiMetricLabels(line({ ...refused, outcome: 'unknown_route' }), CONFIG)).toMatchObject({
      route: '_unknown',
    });
  });

  it("a deployed route's line keeps its name (no version), step, provider and model from its definition", () => {
    expect(
      aiMetricLabels(
        line({ route: 'gifts@12', step: 'cheap', provider: 'sim', model: 'sim-2', outcome: 'rate_limited' }),
        CONFIG,
      ),
    ).toEqual({ route: 'gifts', step: 'cheap', provider: 'sim', model: 'sim-2', outcome: 'rate_limited' });
    expect(
      aiMetricLabels(
        line({ route: 'gifts@1', step: null, provider: null, model: null, outcome: 'no_matching_branch' }),
        CONFIG,
      ),
    ).toEqual({
      route: 'gifts',
      step: 'none',
      provider: 'none',
      model: 'none',
      outcome: 'no_matching_branch',
    });
  });

  it('an outcome outside the fixed set (reasons, error codes) is _unknown', () => {
    for (const outcome of ['ok', 'stream_error', 'canceled', 'spend_limited', 'first_byte_timeout']) {
      expect(aiMetricLabels(line({ outcome }), CONFIG).outcome).toBe(outcome);
    }
    for (const outcome of ['object', 'http_503', 'some_reason_a_provider_sent', '']) {
      expect(aiMetricLabels(line({ outcome }), CONFIG).outcome).toBe('_unknown');
    }
  });
});
