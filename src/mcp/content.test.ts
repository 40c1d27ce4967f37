import { Client as ModernClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { optionsErrorOf } from '../../test/support/options.js';
import { as } from '../../test/support/principals.js';
import { checkContent, type ContentBlock } from './content.js';
import { connectClient, startGateway, type Gateway, type TestClient } from './test-support.js';
import { resilientTool } from './tool.js';

/**
 * A resilientTool's `toContent`: typed content blocks (image, audio, embedded resource, resource link) reach
 * the SDK v1 client on 2025-11-25 and the SDK v2 client on 2026-07-28 as they are; a malformed block is the
 * tool's bug, answered as `internal_error`.
 */

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';
const BLOCKS: ContentBlock[] = [
  { type: 'text', text: 'Your chart:' },
  { type: 'image', data: PNG, mimeType: 'image/png' },
  { type: 'audio', data: 'UklGRg==', mimeType: 'audio/wav', annotations: { audience: ['user'] } },
  { type: 'resource', resource: { uri: 'test://notes', mimeType: 'text/plain', text: 'notes' } },
  { type: 'resource', resource: { uri: 'test://bytes', mimeType: 'application/octet-stream', blob: 'AAE=' } },
  { type: 'resource_link', uri: 'test://report', name: 'report', mimeType: 'application/pdf' },
];

let gw: Gateway;
let v1: TestClient | undefined;
let v2: ModernClient | undefined;

afterEach(async () => {
  await v2?.close().catch(() => undefined);
  await v1?.close().catch(() => undefined);
  v1 = v2 = undefined;
  await gw.close();
});

async function start(): Promise<void> {
  gw = await startGateway({
    tools: () => [
      resilientTool({
        name: 'chart',
        description: 'Draws a chart.',
        inputSchema: {},
        handler: () => ({ points: 3 }),
        toContent: () => BLOCKS,
      }),
      resilientTool({
        name: 'broken_chart',
        description: 'Draws a chart badly.',
        inputSchema: {},
        handler: () => ({ points: 3 }),
        toContent: () => [{ type: 'image', data: 'not base64!', mimeType: 'image/png' }],
      }),
    ],
  });
}

async function modern(): Promise<ModernClient> {
  v2 = new ModernClient(
    { name: 'content-test-v2', version: '0.0.1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await v2.connect(new StreamableHTTPClientTransport(gw.mcpUrl, { requestInit: { headers: as('ada') } }));
  return v2;
}

describe('resilientTool toContent', () => {
  it('answers the blocks as they are, with the value as structuredContent, on both eras', async () => {
    await start();
    v1 = await connectClient(gw.mcpUrl, as('ada'));
    const old = await v1.client.callTool({ name: 'chart', arguments: {} });
    expect(old).toEqual({ content: BLOCKS, structuredContent: { points: 3 } });

    const client = await modern();
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const now = await client.callTool({ name: 'chart', arguments: {} });
    expect(now.content).toEqual(BLOCKS);
    expect(now.structuredContent).toEqual({ points: 3 });
    expect(now.isError).toBeUndefined();
  });

  it('answers a malformed block as internal_error, never as the block', async () => {
    await start();
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const client = await modern();
      const result = await client.callTool({ name: 'broken_chart', arguments: {} });
      expect(result.isError).toBe(true);
      expect((result.structuredContent as { error: { code: string } }).error.code).toBe('internal_error');
      expect(JSON.stringify(result.content)).not.toContain('not base64!');
      // The server reports the tool's bug (its default onError is a process warning).
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((w) => w.message)).toEqual(['mcp: broken_chart: content[0].data: not base64']);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('is checked at definition: a toContent that is not a function is an OptionsError', () => {
    const e = optionsErrorOf(() =>
      resilientTool({
        name: 'x',
        description: 'd',
        inputSchema: {},
        handler: () => 1,
        toContent: 'blocks' as never,
      }),
    );
    expect(e.problems.map((p) => p.option)).toEqual(['toContent']);
  });
});

describe('checkContent', () => {
  it('accepts every well-formed block kind', () => {
    expect(checkContent(BLOCKS)).toBe(BLOCKS);
  });

  it.each([
    [[], 'toContent must answer a non-empty array of content blocks'],
    ['text', 'toContent must answer a non-empty array of content blocks'],
    [[null], 'content[0] is not an object'],
    [[{ type: 'text', text: 1 }], 'content[0].text: not a string'],
    [
      [
        { type: 'text', text: '' },
        { type: 'image', data: 'abc', mimeType: 'image/png' },
      ],
      'content[1].data: not base64',
    ],
    [[{ type: 'audio', data: 'AAE=', mimeType: '' }], 'content[0].mimeType: not a non-empty string'],
    [
      [{ type: 'resource', resource: { uri: 'u' } }],
      'content[0].resource: needs exactly one of text and blob',
    ],
    [
      [{ type: 'resource', resource: { uri: 'u', text: 't', blob: 'AAE=' } }],
      'content[0].resource: needs exactly one of text and blob',
    ],
    [
      [{ type: 'resource', resource: { uri: '', text: 't' } }],
      'content[0].resource.uri: not a non-empty string',
    ],
    [[{ type: 'resource', resource: { uri: 'u', blob: '%%' } }], 'content[0].resource.blob: not base64'],
    [[{ type: 'resource_link', uri: 'u' }], 'content[0].name: not a non-empty string'],
    [
      [{ type: 'video', data: 'AAE=' }],
      'content[0].type: "video" is not text, image, audio, resource or resource_link',
    ],
  ])('rejects %j with "%s"', (blocks, message) => {
    expect(() => checkContent(blocks)).toThrow(new TypeError(message));
  });
});
