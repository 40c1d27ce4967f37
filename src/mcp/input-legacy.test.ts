import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { as } from '../../test/support/principals.js';
import { FakeClock } from '../core/index.js';
import { prompt } from './prompt.js';
import { startGateway, type Gateway } from './test-support.js';
import { resilientTool } from './tool.js';

/**
 * Asking the user during a call on a 2025-11-25 session: the same `ctx.requestInput` sends real
 * `elicitation/create` (and sampling, roots) requests to the SDK 1.x client while the call waits.
 */

let gw: Gateway;
const clients: Client[] = [];
let runs = 0;

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  await gw.close();
});

const NAME = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } as const;

async function start(clock?: FakeClock): Promise<void> {
  runs = 0;
  gw = await startGateway({
    server: {
      ...(clock === undefined ? {} : { clock }),
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
        deadlineMs: 2_000,
        handler: async (_args, ctx) => {
          runs++;
          const answer = await ctx.requestInput({ message: 'What is your name?', schema: NAME });
          return { greeting: `Hello, ${String(answer.content?.['name'])}!`, action: answer.action };
        },
      }),
      resilientTool({
        name: 'everything',
        description: 'Asks a question, the model and the roots at once.',
        inputSchema: {},
        handler: async (_args, ctx) => {
          const answers = await ctx.requestInputs({
            who: { message: 'Who?', schema: NAME },
            draft: {
              sampling: { messages: [{ role: 'user', content: { type: 'text', text: 'Hi' } }], maxTokens: 5 },
            },
            where: { roots: true },
          });
          return {
            who: answers.who.content?.['name'],
            draft: answers.draft.content,
            where: answers.where.roots.map((root) => root.uri),
            support: ctx.inputSupport,
          };
        },
      }),
    ],
  });
}

type Capabilities = ConstructorParameters<typeof Client>[1] extends infer O
  ? NonNullable<O> extends { capabilities?: infer C }
    ? C
    : never
  : never;

async function connect(capabilities: Capabilities, caller = 'ada'): Promise<Client> {
  const client = new Client({ name: 'mcp-test', version: '0.0.1' }, { capabilities });
  clients.push(client);
  await client.connect(
    new StreamableHTTPClientTransport(gw.mcpUrl, { requestInit: { headers: as(caller) } }),
  );
  return client;
}

describe('asking the user during a call, MCP 2025-11-25 sessions', () => {
  it('one question: a real elicitation/create reaches the client while the call waits; the handler runs once', async () => {
    await start();
    const client = await connect({ elicitation: {} });
    const asked: unknown[] = [];
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params);
      return { action: 'accept', content: { name: 'Ada' } };
    });
    const result = await client.callTool({ name: 'greet', arguments: {} });
    expect(result.structuredContent).toEqual({ greeting: 'Hello, Ada!', action: 'accept' });
    expect(asked).toEqual([{ message: 'What is your name?', requestedSchema: NAME }]);
    expect(runs).toBe(1);
  });

  it('several at once: the question, the sampling and the roots requests are all sent', async () => {
    await start();
    const client = await connect({ elicitation: {}, sampling: {}, roots: {} });
    client.setRequestHandler(ElicitRequestSchema, () => ({ action: 'accept', content: { name: 'Ada' } }));
    client.setRequestHandler(CreateMessageRequestSchema, () => ({
      role: 'assistant',
      content: { type: 'text', text: 'Hello!' },
      model: 'test',
    }));
    client.setRequestHandler(ListRootsRequestSchema, () => ({ roots: [{ uri: 'file:///work' }] }));
    const result = await client.callTool({ name: 'everything', arguments: {} });
    expect(result.structuredContent).toEqual({
      who: 'Ada',
      draft: { type: 'text', text: 'Hello!' },
      where: ['file:///work'],
      support: { elicitation: true, sampling: true, roots: true },
    });
  });

  it('a prompt asks too', async () => {
    await start();
    const client = await connect({ elicitation: {} });
    client.setRequestHandler(ElicitRequestSchema, () => ({ action: 'accept', content: { name: 'green' } }));
    const got = await client.getPrompt({ name: 'brief', arguments: { topic: 'tea' } });
    expect(got.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'tea: green' } }]);
  });

  it('a client without the capability: input_unavailable, and nothing is sent', async () => {
    await start();
    const client = await connect({});
    const result = await client.callTool({ name: 'greet', arguments: {} });
    expect(result).toMatchObject({
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

  it('a client that answers the request with an error: input_unavailable', async () => {
    await start();
    const client = await connect({ elicitation: {} });
    client.setRequestHandler(ElicitRequestSchema, () => {
      throw new McpError(-32603, 'no user here');
    });
    const result = await client.callTool({ name: 'greet', arguments: {} });
    expect(result).toMatchObject({
      isError: true,
      structuredContent: {
        error: {
          code: 'input_unavailable',
          message: "The client could not answer the request's question (elicitation/create).",
        },
      },
    });
  });

  it('an answer that does not fit the schema: invalid_payload', async () => {
    await start();
    const client = await connect({ elicitation: {} });
    client.setRequestHandler(ElicitRequestSchema, () => ({ action: 'accept', content: { name: 42 } }));
    const result = await client.callTool({ name: 'greet', arguments: {} });
    expect(result).toMatchObject({
      isError: true,
      structuredContent: {
        error: {
          code: 'invalid_payload',
          message: "The client's answer to the question 0 does not fit it: name must be of type string.",
        },
      },
    });
  });

  it('nobody answers: the call ends at its deadline (fake clock)', async () => {
    const clock = new FakeClock();
    await start(clock);
    const client = await connect({ elicitation: {} });
    client.setRequestHandler(ElicitRequestSchema, () => {
      // The question reached the client; the tool's 2 s pass without an answer.
      clock.tick(2_000);
      return new Promise(() => undefined);
    });
    const result = await client.callTool({ name: 'greet', arguments: {} });
    expect(result).toMatchObject({
      isError: true,
      structuredContent: { error: { code: 'deadline_exceeded' } },
    });
  });
});
