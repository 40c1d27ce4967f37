import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { FakeClock } from '../core/index.js';
import { INPUT_BOUNDS } from './input.js';
import { prompt } from './prompt.js';
import { createMcpServer } from './server.js';
import { mrtrRpc, startGateway, type Gateway } from './test-support.js';
import { resilientTool } from './tool.js';

/**
 * The `requestState` of a call that asks the user on MCP 2026-07-28, over real HTTP: signed, bound to the
 * caller, the method, the tool and its arguments, expiring on the server's clock, shared by gateways that
 * share the key; and the round cap.
 */

let gw: Gateway;

afterEach(async () => {
  await gw.close();
});

const NAME = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } as const;

const tools = () => [
  resilientTool({
    name: 'greet',
    description: 'Asks a name, then greets.',
    inputSchema: {},
    handler: async (_args, ctx) => {
      const answer = await ctx.requestInput({ message: 'What is your name?', schema: NAME });
      return { greeting: `Hello, ${String(answer.content?.['name'])}!` };
    },
  }),
  resilientTool({
    name: 'survey',
    description: 'Asks a name about a topic.',
    inputSchema: { topic: z.string() },
    handler: async ({ topic }, ctx) => {
      const one = await ctx.requestInput({ key: 'step1', message: 'Name?', schema: NAME });
      return { topic, name: one.content?.['name'] };
    },
  }),
  resilientTool({
    name: 'essay',
    description: 'Asks for a text, then for a title.',
    inputSchema: {},
    handler: async (_args, ctx) => {
      const schema = { type: 'object', properties: { text: { type: 'string' } } } as const;
      await ctx.requestInput({ key: 'text', message: 'Your text?', schema });
      await ctx.requestInput({ key: 'title', message: 'Its title?', schema });
      return 'done';
    },
  }),
  resilientTool({
    name: 'pester',
    description: 'Asks a new question every round.',
    inputSchema: {},
    handler: async (_args, ctx) => {
      for (let i = 0; ; i++) await ctx.requestInput({ key: `q${i}`, message: `Question ${i}?` });
    },
  }),
];

async function start(clock?: FakeClock): Promise<void> {
  gw = await startGateway({
    tools,
    server: {
      ...(clock === undefined ? {} : { clock }),
      requestStateTtlMs: 60_000,
      // A prompt of the tool's name: a state minted for the tool must not serve it.
      prompts: [
        prompt({
          name: 'survey',
          arguments: { topic: z.string() },
          get: async ({ topic }, ctx) => {
            const one = await ctx.requestInput({ key: 'step1', message: 'Name?', schema: NAME });
            return [
              { role: 'user', content: { type: 'text', text: `${topic}: ${String(one.content?.['name'])}` } },
            ];
          },
        }),
      ],
    },
  });
}

const rpc = (caller: string, method: string, params: Record<string, unknown>) =>
  mrtrRpc(gw.mcpUrl, caller, method, params);

const call = (
  caller: string,
  name: string,
  args: Record<string, unknown> = {},
  more: Record<string, unknown> = {},
) => rpc(caller, 'tools/call', { name, arguments: args, ...more });

const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });

describe('the requestState of a call that asks the user, MCP 2026-07-28', () => {
  it(`answers larger than a state may carry (${INPUT_BOUNDS.maxStateChars} characters) fail the call: payload_too_large`, async () => {
    await start();
    const big = await call(
      'ada',
      'essay',
      {},
      {
        inputResponses: { text: accept({ text: 'x'.repeat(INPUT_BOUNDS.maxStateChars) }) },
      },
    );
    expect(big.result).toMatchObject({
      isError: true,
      structuredContent: { error: { code: 'payload_too_large' } },
    });
    const small = await call('ada', 'essay', {}, { inputResponses: { text: accept({ text: 'short' }) } });
    expect(Object.keys(small.result!.inputRequests!)).toEqual(['title']);
  });

  it('a tampered state, one minted for another caller, or for other arguments: -32602', async () => {
    await start();
    const one = await call('ada', 'survey', { topic: 'gifts' });
    const state = one.result!.requestState!;
    const refused = {
      code: -32602,
      message: 'Invalid or expired requestState',
      data: { reason: 'invalid_request_state' },
    };
    const answers = { inputResponses: { step1: accept({ name: 'Ada' }) } };
    expect(
      (await call('ada', 'survey', { topic: 'gifts' }, { ...answers, requestState: `${state}-TAMPERED` }))
        .error,
    ).toEqual(refused);
    expect(
      (await call('bob', 'survey', { topic: 'gifts' }, { ...answers, requestState: state })).error,
    ).toEqual(refused);
    expect(
      (await call('ada', 'survey', { topic: 'cars' }, { ...answers, requestState: state })).error,
    ).toEqual(refused);
    // The prompt of the same name is another method: refused too.
    expect(
      (
        await rpc('ada', 'prompts/get', {
          name: 'survey',
          arguments: { topic: 'gifts' },
          ...answers,
          requestState: state,
        })
      ).error,
    ).toEqual(refused);
    // The untouched state still works for its caller and arguments.
    const two = await call('ada', 'survey', { topic: 'gifts' }, { ...answers, requestState: state });
    expect(two.result?.['structuredContent']).toEqual({ topic: 'gifts', name: 'Ada' });
  });

  it('a state past its ttl (server clock) is refused with -32602', async () => {
    const clock = new FakeClock(Date.now());
    await start(clock);
    const first = await call('ada', 'greet');
    const answers = {
      inputResponses: { '0': accept({ name: 'Ada' }) },
      requestState: first.result!.requestState,
    };
    clock.tick(60_001);
    expect((await call('ada', 'greet', {}, answers)).error).toMatchObject({
      code: -32602,
      message: 'Invalid or expired requestState',
    });
  });

  it(`a call that keeps asking stops after ${INPUT_BOUNDS.maxRounds} rounds`, async () => {
    await start();
    let state: string | undefined;
    for (let round = 0; round < INPUT_BOUNDS.maxRounds; round++) {
      const answer = await call(
        'ada',
        'pester',
        {},
        {
          ...(state === undefined ? {} : { requestState: state }),
          inputResponses: { [`q${round - 1}`]: { action: 'decline' } },
        },
      );
      expect(answer.result?.inputRequests).toEqual({
        [`q${round}`]: {
          method: 'elicitation/create',
          params: { message: `Question ${round}?`, requestedSchema: { type: 'object', properties: {} } },
        },
      });
      state = answer.result!.requestState;
    }
    const stopped = await call(
      'ada',
      'pester',
      {},
      {
        requestState: state,
        inputResponses: { [`q${INPUT_BOUNDS.maxRounds - 1}`]: { action: 'decline' } },
      },
    );
    expect(stopped.result).toMatchObject({
      isError: true,
      structuredContent: { error: { code: 'input_unavailable' } },
    });
  });
});

describe('asking the user, MCP 2026-07-28: the requestState key', () => {
  it('gateways that share the key serve each other’s rounds; one with its own key refuses them', async () => {
    const key = 'a shared secret of at least 32 bytes!';
    gw = await startGateway({ tools, server: { requestStateKey: key } });
    const first = await call('ada', 'greet');
    const answers = {
      inputResponses: { '0': accept({ name: 'Ada' }) },
      requestState: first.result!.requestState,
    };
    const minting = gw;
    const others: Gateway[] = [];
    try {
      gw = await startGateway({ tools, server: { requestStateKey: new TextEncoder().encode(key) } });
      others.push(gw);
      expect((await call('ada', 'greet', {}, answers)).result?.['structuredContent']).toEqual({
        greeting: 'Hello, Ada!',
      });
      gw = await startGateway({ tools });
      others.push(gw);
      expect((await call('ada', 'greet', {}, answers)).error?.code).toBe(-32602);
    } finally {
      for (const other of others) await other.close();
      gw = minting;
    }
  });

  it('a key shorter than 32 bytes is refused at startup', async () => {
    expect(() =>
      createMcpServer({ name: 't', version: '1', tools: tools(), requestStateKey: 'short' }),
    ).toThrow('createMcpServer: requestStateKey must be a string or Uint8Array of at least 32 bytes');
    gw = await startGateway({ tools });
  });
});
