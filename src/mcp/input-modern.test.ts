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
const SAMPLING = { messages: [{ role: 'user' as const, content: { type: 'text', text: 'Hi' } }], maxTokens: 5 };

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
            return [{ role: 'user', content: { type: 'text', text: `${topic}: ${String(answer.content?.['name'])}` } }];
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

const call = (caller: string, name: string, args: Record<string, unknown> = {}, more: Record<string, unknown> = {}) =>
  rpc(caller, 'tools/call', { name, arguments: args, ...more });

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
    const second = await call('ada', 'greet', {}, {
      inputResponses: { '0': accept({ name: 'Ada' }) },
      requestState: first.result!.requestState,
    });
    expect(second.result).toMatchObject({
      resultType: 'complete',
      structuredContent: { greeting: 'Hello, Ada!', action: 'accept' },
    });
    expect(runs).toBe(2);
  });
});

