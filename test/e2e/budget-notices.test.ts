/**
 * AI budget notices through the whole gateway (`startGateway` with an app that declares an AI gateway): the
 * official openai client spends a budget of ten requests on the simulated provider; the gateway prints "at
 * 80 %" at the eighth, "used up" at the tenth, and nothing more for the refusals that follow.
 */
import type { APIError } from 'openai';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { defineApp } from '../../src/gateway/app.js';
import { startGateway } from '../../src/gateway/index.js';
import { SIM_KEY, ask, startSim, tempDb, until, useCleanups } from '../ai/support.js';

const defer = useCleanups();
const AT = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ';
const UNTIL = '\\d{4}-\\d\\d-\\d\\dT00:00:00Z';

describe('AI budget notices in the gateway', () => {
  it('80 % at the eighth request, used up at the tenth, once', async () => {
    const sim = await startSim(defer);
    const lines: string[] = [];
    const app = defineApp({
      setup: () => ({
        name: 'budget',
        version: '1.0.0',
        ai: {
          providers: { sim: { baseUrl: sim.url, apiKeyEnv: 'SIM_KEY' } },
          env: { SIM_KEY },
          // 50 output tokens at 2 USD per million: 100 micro-USD a request, estimated and real alike.
          prices: { 'sim/sim-1': { inputPerMTok: 0, outputPerMTok: 2 } },
          spendRules: [{ name: 'daily', budgetUsd: 0.001, windowMs: 86_400_000, scope: { by: 'provider' } }],
        },
      }),
    });
    const gateway = await startGateway({
      app,
      store: tempDb(defer, 'breakwater-budget'),
      port: 0,
      log: (line) => lines.push(line),
    });
    defer(() => gateway.close());
    const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const notices = () => lines.filter((line) => line.includes('AI budget'));

    for (let i = 0; i < 7; i++) await client.chat.completions.create(ask('sim/sim-1', { max_tokens: 50 }));
    expect(notices()).toEqual([]);
    await client.chat.completions.create(ask('sim/sim-1', { max_tokens: 50 }));
    // The cost is settled once the answer has ended, which may be just after the client has it.
    await until(() => notices().length > 0);
    expect(notices()).toEqual([
      expect.stringMatching(
        new RegExp(
          `^${AT} AI budget daily \\(provider sim\\) at 80 %: 0\\.0008 of 0\\.001 USD spent in the window ending ${UNTIL}; requests go on until it is used up$`,
        ),
      ),
    ]);
    for (let i = 0; i < 2; i++) await client.chat.completions.create(ask('sim/sim-1', { max_tokens: 50 }));
    await until(() => notices().length > 1);
    for (let i = 0; i < 3; i++) {
      const refused = await client.chat.completions.create(ask('sim/sim-1', { max_tokens: 50 })).then(
        () => undefined,
        (e: APIError) => [e.status, e.code],
      );
      expect(refused).toEqual([429, 'spend_limited']);
    }
    expect(notices().slice(1)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^${AT} AI budget daily \\(provider sim\\) used up: 0\\.001 of 0\\.001 USD spent; requests it covers get 429 spend_limited until ${UNTIL}$`,
        ),
      ),
    ]);
  });
});
