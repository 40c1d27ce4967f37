import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { as } from '../../test/support/principals.js';
import { clientClosers, modernClient, v1Client } from './catalog-test-support.js';
import { startGateway, type Gateway } from './test-support.js';
import { jsonSchemaInput, resilientTool } from './tool.js';

/**
 * A tool input given as JSON Schema (listed as given, checked by the SDK's validator) and `Mcp-Param-*`
 * headers checked against `x-mcp-header` arguments on 2026-07-28, over real HTTP.
 */

let gw: Gateway | undefined;

afterEach(async () => {
  for (const close of clientClosers.splice(0)) await close().catch(() => undefined);
  await gw?.close();
  gw = undefined;
});

const CONTACT = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: { phone: { $anchor: 'phoneDef', type: 'string', pattern: '^[0-9+ ]+$' } },
  properties: { name: { type: 'string' }, phone: { $ref: '#/$defs/phone' }, email: { type: 'string' } },
  anyOf: [{ required: ['phone'] }, { required: ['email'] }],
  additionalProperties: false,
};

const contact = resilientTool({
  name: 'contact',
  description: 'Takes a contact.',
  inputSchema: jsonSchemaInput(CONTACT),
  handler: (args) => args,
});
const regional = resilientTool({
  name: 'regional',
  description: 'Runs in a region.',
  inputSchema: { region: z.string().meta({ 'x-mcp-header': 'Region' }), note: z.string().optional() },
  handler: ({ region }) => ({ region }),
});

async function start(): Promise<Gateway> {
  gw = await startGateway({ tools: () => [contact, regional] });
  return gw;
}

describe('jsonSchemaInput', () => {
  it('is listed exactly as given and checks calls, in both eras', async () => {
    await start();
    for (const client of [await v1Client(gw!.mcpUrl, 'ada'), await modernClient(gw!.mcpUrl, 'ada')]) {
      const listed = (await client.listTools()).tools.find((tool) => tool.name === 'contact');
      expect(listed?.inputSchema).toEqual(CONTACT);
      const ok = await client.callTool({ name: 'contact', arguments: { name: 'Ada', email: 'a@b.c' } });
      expect(ok.structuredContent).toEqual({ name: 'Ada', email: 'a@b.c' });
      const bad = await client.callTool({ name: 'contact', arguments: { name: 'Ada', phone: 'call me' } });
      expect(bad.isError).toBe(true);
      expect((bad.structuredContent as { error: { code: string } }).error.code).toBe('invalid_payload');
    }
  });

  it('refuses a schema that is not of type object', () => {
    expect(() => jsonSchemaInput({ type: 'string' })).toThrow(RangeError);
  });
});

describe('Mcp-Param headers on 2026-07-28', () => {
  async function call(args: Record<string, unknown>, headers: Record<string, string>): Promise<Response> {
    return fetch(gw!.mcpUrl, {
      method: 'POST',
      headers: {
        ...as('ada'),
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'regional',
        ...headers,
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: {
          name: 'regional',
          arguments: args,
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '0.0.1' },
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      }),
    });
  }

  it('runs a call whose header agrees, literal or Base64', async () => {
    await start();
    for (const value of ['eu-west', `=?base64?${Buffer.from('eu-west').toString('base64')}?=`]) {
      const response = await call({ region: 'eu-west' }, { 'mcp-param-region': value });
      expect(response.status).toBe(200);
      const body = (await response.json()) as { result: { structuredContent: unknown } };
      expect(body.result.structuredContent).toEqual({ region: 'eu-west' });
    }
  });

  it('answers HTTP 400 with -32020 for a missing, bad or different header', async () => {
    await start();
    const cases: [Record<string, string>, string][] = [
      [{}, 'Bad Request: the body carries region but the Mcp-Param-Region header is absent.'],
      [
        { 'mcp-param-region': '=?base64?ZXU!?=' },
        'Bad Request: the Mcp-Param-Region header carries invalid Base64.',
      ],
      [
        { 'mcp-param-region': 'us-east' },
        "Bad Request: the Mcp-Param-Region header and the body's region differ.",
      ],
    ];
    for (const [headers, message] of cases) {
      const response = await call({ region: 'eu-west' }, headers);
      expect(response.status).toBe(400);
      expect(await response.json()).toEqual({
        jsonrpc: '2.0',
        id: 7,
        error: { code: -32020, message, data: { mismatch: { header: 'Mcp-Param-Region', body: 'region' } } },
      });
    }
  });
});
