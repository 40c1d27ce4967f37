import { Client as ModernClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { as } from '../../test/support/principals.js';
import { prompt } from './prompt.js';
import { resource } from './resource.js';
import { mrtrRpc, startGateway, type Gateway } from './test-support.js';
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

async function start(): Promise<void> {
  runs = 0;
  gw = await startGateway({
    server: {
      requestStateTtlMs: 60_000,
      resources: [
        resource({
          uri: 'test://asks',
          name: 'asks',
          mimeType: 'text/plain',
          read: async (ctx) => {
            const answer = await ctx.requestInput({ message: 'Which part?', schema: NAME });
            return `part ${String(answer.content?.['name'])}`;
          },
        }),
      ],
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
    ],
  });
}

const call = (
  caller: string,
  name: string,
  args: Record<string, unknown> = {},
  more: Record<string, unknown> = {},
) => rpc(caller, 'tools/call', { name, arguments: args, ...more });

const rpc = (caller: string, method: string, params: Record<string, unknown>) =>
  mrtrRpc(gw.mcpUrl, caller, method, params);

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

  it('a client without the capability: the request is refused with -32021 naming it, HTTP 400', async () => {
    await start();
    const refused = await call(
      'ada',
      'greet',
      {},
      {
        _meta: { 'io.modelcontextprotocol/clientCapabilities': { sampling: {} } },
      },
    );
    expect(refused.status).toBe(400);
    expect(refused.result).toBeUndefined();
    expect(refused.error).toEqual({
      code: -32021,
      message:
        'Missing required client capability: the request asks the user for input through elicitation, which the client did not declare.',
      data: { requiredCapabilities: { elicitation: {} } },
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

describe('asking the user, MCP 2026-07-28: a resource read', () => {
  it('input_required from resources/read, then its contents', async () => {
    await start();
    const first = await rpc('ada', 'resources/read', { uri: 'test://asks' });
    expect(first.result?.resultType).toBe('input_required');
    const done = await rpc('ada', 'resources/read', {
      uri: 'test://asks',
      inputResponses: { '0': accept({ name: 'two' }) },
      requestState: first.result!.requestState,
    });
    expect(done.result?.['contents']).toEqual([
      { uri: 'test://asks', mimeType: 'text/plain', text: 'part two' },
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
