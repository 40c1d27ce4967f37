/**
 * "Anyone can lock the AI budget", the attack: 21 streamed requests with a large `max_tokens`,
 * opened and dropped, were charged their whole reservation ($4.20 of a $5 day) while they had produced a
 * token or two each, and the model then answered 429 `spend_limited` for the rest of the day.
 *
 * Real parts: the simulated provider (examples/llm-sim) or a hand-written node:http one, the gateway on a
 * Fastify app listening on 127.0.0.1 with its budgets in SQLite, and the official `openai` client with two
 * API keys (their principals set by the test's stand-in for the HTTP edge). The budget's window runs on a
 * FakeClock; real time only moves bytes.
 *
 * The simulated provider bills a prompt at ceil(JSON bytes of `messages` / 4) tokens and each streamed
 * word as one token: the gateway's estimate of a dropped stream (docs/ai-gateway.md, "Dropped streams")
 * counts the same for these requests, so "the real usage" below is exact.
 */
import type { APIError } from 'openai';
import type OpenAI from 'openai';
import { Client } from 'undici';
import { describe, expect, it } from 'vitest';
import { readSpendState, spendWindowStart, type SpendRule } from '../../src/ai/index.js';
import { FakeClock } from '../../src/core/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import { type Store } from '../../src/store/index.js';
import {
  ask,
  clientFor,
  keyPrincipal,
  startGateway,
  startSim,
  tempDb,
  until,
  useCleanups,
} from '../ai/support.js';
import { scriptedProvider } from './ai-support.js';

const defer = useCleanups();
const DAY = 86_400_000;
const BUDGET: SpendRule = { name: 'daily', budgetUsd: 5, windowMs: DAY, scope: { by: 'model' } };
// 1 micro-USD per input token, 100 per output token: max_tokens 2000 reserves $0.20 and a little.
const PRICES = { 'sim/sim-1': { inputPerMTok: 1, outputPerMTok: 100 } };
const PRINCIPALS = { 'key-a': keyPrincipal('a'), 'key-b': keyPrincipal('b') };
const MESSAGES = ask('sim/sim-1').messages;
/** What the simulated provider counts as the prompt's tokens: a quarter of its JSON bytes, rounded up. */
const SIM_PROMPT_TOKENS = Math.ceil(Buffer.byteLength(JSON.stringify(MESSAGES)) / 4);
/** The real cost of a stream dropped after its first token (one word, `A`): its prompt and one token. */
const ONE_TOKEN_MICRO = SIM_PROMPT_TOKENS * 1 + 1 * 100;

async function setup() {
  const clock = new FakeClock();
  const store: Store = await openSqliteStore({ path: tempDb(defer, 'breakwater-ai'), clock });
  defer(() => store.close());
  // One word every 10 s: a stream read to its first word has produced exactly that word when dropped.
  const sim = await startSim(defer, { tokensPerSecond: 0.1 });
  const running = await startGateway(
    defer,
    { sim },
    { clock, store, prices: PRICES, spendRules: [BUDGET] },
    PRINCIPALS,
  );
  const key = `ai:spend:daily:v:${encodeURIComponent('sim/sim-1')}:${spendWindowStart(clock.now(), DAY)}`;
  const spend = async () => readSpendState(await store.counters.get(key));
  return {
    clock,
    sim,
    ...running,
    spend,
    a: clientFor(running.url, 'key-a'),
    b: clientFor(running.url, 'key-b'),
  };
}

/** Opens a stream with a large max_tokens and reads it up to its first word; the caller drops it. */
async function openToFirstWord(client: OpenAI): Promise<{ drop: () => void }> {
  const stream = await client.chat.completions.create({
    ...ask('sim/sim-1', { max_tokens: 2000 }),
    stream: true,
  });
  const iterator = stream[Symbol.asyncIterator]();
  for (;;) {
    const { value, done } = await iterator.next();
    if (done === true) throw new Error('the stream ended before its first word');
    if (value.choices[0]?.delta.content) break;
  }
  return { drop: () => stream.controller.abort() };
}

/** A request with an estimate of $0.90: refused while more than $4.10 of the $5 day is spent or reserved. */
function bigRequest(client: OpenAI) {
  return client.chat.completions
    .create(ask('sim/sim-1', { max_tokens: 9000 }))
    .withResponse()
    .then(({ response }) => ({ status: 200, code: '', cost: response.headers.get('x-breakwater-cost-usd') }))
    .catch((e: unknown) => ({
      status: (e as APIError).status ?? 0,
      code: String((e as APIError).code),
      cost: null,
    }));
}

describe('dropped streams do not lock the AI budget', () => {
  it('21 streams with max_tokens 2000 dropped after one word: spent is their real usage, exactly; another key is served', async () => {
    const { sim, a, b, spend, logs } = await setup();
    for (let i = 0; i < 21; i++) (await openToFirstWord(a)).drop();
    await until(() => logs.length === 21);
    expect(logs.every((l) => l.outcome === 'canceled')).toBe(true);
    // Before: 21 whole reservations, 21 × 200,059 micro-USD = $4.20.
    expect(await spend()).toEqual({ spentMicroUsd: 21 * ONE_TOKEN_MICRO, reservedMicroUsd: 0 });

    sim.faults.patch({ tokensPerSecond: 0 });
    const served = await bigRequest(b);
    expect(served).toEqual({ status: 200, code: '', cost: formatMicro(SIM_PROMPT_TOKENS + 9000 * 100) });
    expect(await spend()).toEqual({
      spentMicroUsd: 21 * ONE_TOKEN_MICRO + SIM_PROMPT_TOKENS + 900_000,
      reservedMicroUsd: 0,
    });
  });

  it('21 streams held open at once: one key holds at most its share (a quarter of the budget); another key is served meanwhile', async () => {
    const { sim, a, b, spend, logs } = await setup();
    const opened = await Promise.all(
      Array.from({ length: 21 }, () => openToFirstWord(a).catch((e: unknown) => e as APIError)),
    );
    const held = opened.filter((o): o is { drop: () => void } => !(o instanceof Error));
    const refused = opened.filter((o): o is APIError => o instanceof Error);
    // A quarter of $5 is $1.25: six reservations of $0.200059 fit in it, the seventh does not.
    expect(held).toHaveLength(6);
    expect(refused).toHaveLength(15);
    for (const e of refused) {
      expect([e.status, e.code, e.headers?.get('retry-after')]).toEqual([429, 'spend_limited', '1']);
    }
    expect(await spend()).toEqual({ spentMicroUsd: 0, reservedMicroUsd: 6 * reservation(2000) });

    // Before: 21 reservations ($4.20) held, and this one was refused with reserved_in_flight.
    sim.faults.patch({ tokensPerSecond: 0 });
    const served = await bigRequest(b);
    expect(served.status).toBe(200);

    for (const h of held) h.drop();
    await until(() => logs.length === 22);
    expect(await spend()).toEqual({
      spentMicroUsd: 6 * ONE_TOKEN_MICRO + SIM_PROMPT_TOKENS + 900_000,
      reservedMicroUsd: 0,
    });
  });
});

describe('a client leaving a stream (hand-written provider)', () => {
  /** The first frames of a stream: the role chunk and `words`, in one write. */
  const frames = (words: string[], usage?: string): string =>
    [
      `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n`,
      ...words.map((w) => `data: {"choices":[{"index":0,"delta":{"content":${JSON.stringify(w)}}}]}\n\n`),
      ...(usage === undefined ? [] : [`data: {"choices":[],"usage":${usage}}\n\n`]),
    ].join('');

  async function gateway(first: string) {
    let aborted = 0;
    const provider = await scriptedProvider(defer, (res) => {
      res.on('close', () => {
        if (!res.writableFinished) aborted++;
      });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(first); // and never more: the provider is still generating when the client leaves
    });
    const clock = new FakeClock();
    const store = await openSqliteStore({ path: tempDb(defer, 'breakwater-ai'), clock });
    defer(() => store.close());
    const running = await startGateway(
      defer,
      {},
      {
        clock,
        store,
        prices: { 'raw/m': PRICES['sim/sim-1'] },
        spendRules: [{ ...BUDGET, scope: { by: 'provider' } }],
        providers: { raw: { baseUrl: provider.url } },
      },
      PRINCIPALS,
    );
    const key = `ai:spend:daily:v:raw:${spendWindowStart(clock.now(), DAY)}`;
    return {
      ...running,
      provider,
      aborted: () => aborted,
      spend: async () => readSpendState(await store.counters.get(key)),
    };
  }

  /** Opens a stream and leaves once the response's head arrived, without reading a byte of its body. */
  async function openAndLeave(url: string): Promise<number> {
    const client = new Client(url);
    defer(() => client.destroy());
    const leave = new AbortController();
    const answer = await client.request({
      path: '/v1/chat/completions',
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer key-a' },
      body: JSON.stringify(ask('raw/m', { stream: true, max_tokens: 2000 })),
      signal: leave.signal,
    });
    leave.abort();
    await answer.body.text().catch(() => undefined);
    return answer.statusCode;
  }

  it('unread: the provider sees its request aborted, and the spend is the prompt and the words it had sent', async () => {
    // 16 bytes of text: 4 tokens at a quarter of their bytes.
    const g = await gateway(frames(['A scarf', ' and mug.']));
    expect(await openAndLeave(g.url)).toBe(200);
    await until(() => g.aborted() === 1 && g.logs.length === 1);
    expect(g.logs[0]).toMatchObject({ outcome: 'canceled', cost_usd: null });
    const promptTokens = Math.ceil(Buffer.byteLength(JSON.stringify(MESSAGES)) / 4);
    expect(await g.spend()).toEqual({ spentMicroUsd: promptTokens + 4 * 100, reservedMicroUsd: 0 });
  });

  it('the usage arrived before the client left: settled from it exactly', async () => {
    const g = await gateway(frames(['A scarf.'], '{"prompt_tokens":9,"completion_tokens":3}'));
    expect(await openAndLeave(g.url)).toBe(200);
    await until(() => g.aborted() === 1 && g.logs.length === 1);
    expect(g.logs[0]).toMatchObject({ outcome: 'canceled', cost_usd: '0.000309' });
    expect(await g.spend()).toEqual({ spentMicroUsd: 9 + 3 * 100, reservedMicroUsd: 0 });
  });
});

/** The reservation of a stream of the test's one message with `maxTokens` (micro-USD). */
function reservation(maxTokens: number): number {
  // estimateMicroUsd: one token per prompt byte, 4 per message and 3 per answer, at the input price.
  return Buffer.byteLength(JSON.stringify(MESSAGES)) + 4 + 3 + maxTokens * 100;
}

function formatMicro(micro: number): string {
  return (micro / 1e6).toFixed(6).replace(/0+$/, '').replace(/\.$/, '');
}
