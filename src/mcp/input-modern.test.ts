import { Client as ModernClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { as } from '../../test/support/principals.js';
import { FakeClock } from '../core/index.js';
import { INPUT_BOUNDS } from './input.js';
import { prompt } from './prompt.js';
import { startGateway, type Gateway } from './test-support.js';
import { resilientTool } from './tool.js';

/**
 * Asking the user during a call on MCP 2026-07-28 (multi round-trip requests): raw JSON-RPC rounds over real
 * HTTP, and the SDK v2 client that answers `input_required` itself with its elicitation, sampling and roots
 * handlers.
 */

let gw: Gateway;
const clients: ModernClient[] = [];
let runs = 0;

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  await gw.close();
});

const NAME = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } as const;
const COLOR = { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] } as const;
const SAMPLING = {
  messages: [{ role: 'user' as const, content: { type: 'text', text: 'Hi' } }],
  maxTokens: 5,
};

async function start(clock?: FakeClock): Promise<void> {
  runs = 0;
  gw = await startGateway({
    server: {
      ...(clock === undefined ? {} : { clock }),
      requestStateTtlMs: 60_000,
      prompts: [
        prompt({
          name: 'brief',
          arguments: { topic: z.string() },
          get: async ({ topic }, ctx) => {
            const answer = await ctx.requestInput({ message: `Context for ${topic}?`, schema: NAME });
            return [
              {
                role: 'user',
                content: { type: 'text', text: `${topic}: ${String(answer.content?.['name'])}` },
              },
            ];
          },
        }),
      ],
    },
    tools: () => [
      resilientTool({
        name: 'greet',
        description: 'Asks a name, then greets.',
        inputSchema: {},
        handler: async (_args, ctx) => {
          runs++;
          const answer = await ctx.requestInput({ message: 'What is your name?', schema: NAME });
          return { greeting: `Hello, ${String(answer.content?.['name'])}!`, action: answer.action };
        },
      }),
      resilientTool({
        name: 'survey',
        description: 'Asks a name, then a colour, in two rounds.',
        inputSchema: { topic: z.string() },
        handler: async ({ topic }, ctx) => {
          const one = await ctx.requestInput({ key: 'step1', message: 'Name?', schema: NAME });
          const two = await ctx.requestInput({ key: 'step2', message: 'Colour?', schema: COLOR });
          return { topic, name: one.content?.['name'], color: two.content?.['color'] };
        },
      }),
      resilientTool({
        name: 'everything',
        description: 'Asks a question, the model and the roots at once.',
        inputSchema: {},
        handler: async (_args, ctx) => {
          const answers = await ctx.requestInputs({
            who: { message: 'Who?', schema: NAME },
            draft: { sampling: SAMPLING },
            where: { roots: true },
          });
          return {
            who: answers.who.content?.['name'],
            draft: answers.draft.content,
            where: answers.where.roots.map((root) => root.uri),
          };
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
    ],
  });
}

const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0.0.1' },
  'io.modelcontextprotocol/clientCapabilities': { elicitation: {}, sampling: {}, roots: {} },
};

interface Rpc {
  result?: Record<string, unknown> & { requestState?: string; inputRequests?: Record<string, unknown> };
  error?: { code: number; message: string; data?: unknown };
}

let nextId = 1;

/** One raw 2026-07-28 request over HTTP; `params._meta` overrides the envelope's keys. */
async function rpc(caller: string, method: string, params: Record<string, unknown>): Promise<Rpc> {
  const name = (params['name'] ?? params['uri']) as string;
  const response = await fetch(gw.mcpUrl, {
    method: 'POST',
    headers: {
      ...as(caller),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      'mcp-name': name,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method,
      params: { ...params, _meta: { ...ENVELOPE, ...(params['_meta'] as object | undefined) } },
    }),
  });
  const text = await response.text();
  if (response.headers.get('content-type')?.includes('text/event-stream')) {
    const data = text
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => JSON.parse(line.slice(5)) as Rpc & { id?: number });
    return data.find((message) => message.id !== undefined)!;
  }
  return JSON.parse(text) as Rpc;
}

const call = (
  caller: string,
  name: string,
  args: Record<string, unknown> = {},
  more: Record<string, unknown> = {},
) => rpc(caller, 'tools/call', { name, arguments: args, ...more });

const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });

describe('asking the user during a call, MCP 2026-07-28', () => {
  it('one question: input_required with a signed requestState, then the result; the handler ran twice', async () => {
    await start();
    const first = await call('ada', 'greet');
    expect(first.result).toEqual({
      resultType: 'input_required',
      inputRequests: {
        '0': {
          method: 'elicitation/create',
          params: { message: 'What is your name?', requestedSchema: NAME },
        },
      },
      requestState: expect.stringMatching(/^v1\./) as unknown,
      _meta: expect.any(Object) as unknown,
    });
    const second = await call(
      'ada',
      'greet',
      {},
      {
        inputResponses: { '0': accept({ name: 'Ada' }) },
        requestState: first.result!.requestState,
      },
    );
    expect(second.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { greeting: 'Hello, Ada!', action: 'accept' },
    });
    expect(runs).toBe(2);
  });
});

describe('asking the user, MCP 2026-07-28: rounds, state and bounds', () => {
  it('several at once: one round asks a question, the model and the roots; all answers complete it', async () => {
    await start();
    const first = await call('ada', 'everything');
    expect(first.result?.inputRequests).toEqual({
      who: { method: 'elicitation/create', params: { message: 'Who?', requestedSchema: NAME } },
      draft: { method: 'sampling/createMessage', params: SAMPLING },
      where: { method: 'roots/list', params: {} },
    });
    const done = await call(
      'ada',
      'everything',
      {},
      {
        inputResponses: {
          who: accept({ name: 'Ada' }),
          draft: {
            role: 'assistant',
            content: { type: 'text', text: 'Hello!' },
            model: 'm',
            stopReason: 'endTurn',
          },
          where: { roots: [{ uri: 'file:///work', name: 'work' }] },
        },
        requestState: first.result!.requestState,
      },
    );
    expect(done.result?.['structuredContent']).toEqual({
      who: 'Ada',
      draft: { type: 'text', text: 'Hello!' },
      where: ['file:///work'],
    });
  });

  it('multi-round: each round carries the earlier answers in a new state; a wrong key is asked again', async () => {
    await start();
    const args = { topic: 'gifts' };
    const one = await call('ada', 'survey', args);
    expect(Object.keys(one.result!.inputRequests!)).toEqual(['step1']);
    const two = await call('ada', 'survey', args, {
      inputResponses: { step1: accept({ name: 'Ada' }) },
      requestState: one.result!.requestState,
    });
    expect(Object.keys(two.result!.inputRequests!)).toEqual(['step2']);
    expect(two.result!.requestState).not.toBe(one.result!.requestState);
    // A response under a key never asked, and one that does not fit its schema: step2 is asked again.
    const again = await call('ada', 'survey', args, {
      inputResponses: { wrong: accept({ color: 'red' }), step2: accept({ colour: 'red' }) },
      requestState: two.result!.requestState,
    });
    expect(again.result).toMatchObject({
      resultType: 'input_required',
      inputRequests: { step2: expect.any(Object) as unknown },
    });
    const three = await call('ada', 'survey', args, {
      inputResponses: { step2: accept({ color: 'blue' }) },
      requestState: again.result!.requestState,
    });
    expect(three.result?.['structuredContent']).toEqual({ topic: 'gifts', name: 'Ada', color: 'blue' });
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
    expect(two.result?.resultType).toBe('input_required');
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

  it('a client without the capability: the question fails as a tool error, input_unavailable', async () => {
    await start();
    const refused = await call(
      'ada',
      'greet',
      {},
      {
        _meta: { 'io.modelcontextprotocol/clientCapabilities': { sampling: {} } },
      },
    );
    expect(refused.result).toMatchObject({
      resultType: 'complete',
      isError: true,
      structuredContent: {
        error: {
          code: 'input_unavailable',
          message:
            'The request needs input of a kind this client cannot give (elicitation/create): it did not declare the elicitation capability.',
        },
      },
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

  it('a prompt asks too: input_required from prompts/get, then its messages', async () => {
    await start();
    const first = await rpc('ada', 'prompts/get', { name: 'brief', arguments: { topic: 'tea' } });
    expect(first.result?.resultType).toBe('input_required');
    const done = await rpc('ada', 'prompts/get', {
      name: 'brief',
      arguments: { topic: 'tea' },
      inputResponses: { '0': accept({ name: 'green' }) },
      requestState: first.result!.requestState,
    });
    expect(done.result?.['messages']).toEqual([
      { role: 'user', content: { type: 'text', text: 'tea: green' } },
    ]);
  });
});

describe('asking the user, MCP 2026-07-28: the SDK v2 client answers input_required itself', () => {
  it('its elicitation, sampling and roots handlers answer; callTool resolves with the result', async () => {
    await start();
    const client = new ModernClient(
      { name: 'mcp-test-v2', version: '0.0.1' },
      {
        versionNegotiation: { mode: { pin: '2026-07-28' } },
        capabilities: { elicitation: {}, sampling: {}, roots: {} },
      },
    );
    clients.push(client);
    const asked: string[] = [];
    client.setRequestHandler('elicitation/create', (request) => {
      asked.push(request.params.message);
      return { action: 'accept', content: { name: 'Ada' } };
    });
    client.setRequestHandler('sampling/createMessage', () => ({
      role: 'assistant',
      content: { type: 'text', text: 'Hi!' },
      model: 'test',
    }));
    client.setRequestHandler('roots/list', () => ({ roots: [{ uri: 'file:///home' }] }));
    await client.connect(
      new StreamableHTTPClientTransport(gw.mcpUrl, { requestInit: { headers: as('ada') } }),
    );

    const greeted = await client.callTool({ name: 'greet', arguments: {} });
    expect(greeted.structuredContent).toEqual({ greeting: 'Hello, Ada!', action: 'accept' });
    const everything = await client.callTool({ name: 'everything', arguments: {} });
    expect(everything.structuredContent).toEqual({
      who: 'Ada',
      draft: { type: 'text', text: 'Hi!' },
      where: ['file:///home'],
    });
    expect(asked).toEqual(['What is your name?', 'Who?']);
  });
});
