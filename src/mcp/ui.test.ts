import { Client as ModernClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { RESOURCE_MIME_TYPE, RESOURCE_URI_META_KEY } from '@modelcontextprotocol/ext-apps';
import { getToolUiResourceUri } from '@modelcontextprotocol/ext-apps/app-bridge';
import { afterEach, describe, expect, it } from 'vitest';
import { expectOptionsError } from '../../test/support/options.js';
import { as } from '../../test/support/principals.js';
import { jobTool } from './job-tools.js';
import { resource } from './resource.js';
import { connectClient, startGateway, type Gateway } from './test-support.js';
import { createMcpServer } from './server.js';
import { resilientTool } from './tool.js';
import { uiResource } from './ui.js';
import { APPS_SDK_MIME_TYPE, MCP_APP_MIME_TYPE } from './ui-meta.js';

/**
 * MCP Apps and the Apps SDK over real HTTP, with the SDK's v1 client (2025-11-25 sessions) and its v2 client
 * pinned to 2026-07-28: a tool names a `uiResource`, both forms are listed and read with their MIME types
 * and metadata, and the tools carry both forms' `_meta`.
 */

let gw: Gateway | undefined;
const closers: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0)) await close().catch(() => undefined);
  await gw?.close();
  gw = undefined;
});

const PAGE = '<!doctype html><html><body><p>analysis</p></body></html>';

const widget = uiResource({
  uri: 'ui://test/analysis.html',
  name: 'analysis',
  title: 'Analysis',
  description: 'Follows an analysis.',
  html: () => Promise.resolve(PAGE),
  csp: { connectDomains: ['https://api.example.com'], resourceDomains: [] },
  prefersBorder: true,
});

const guide = resource({
  uri: 'test://guide',
  name: 'guide',
  mimeType: 'text/markdown',
  read: () => '# Guide',
});

async function start(): Promise<Gateway> {
  gw = await startGateway({
    tools: () => [
      jobTool({
        name: 'start_analysis',
        description: 'Starts an analysis.',
        inputSchema: {},
        jobType: 'analysis',
        ui: widget,
      }),
      resilientTool({
        name: 'show',
        description: 'Shows the same widget.',
        inputSchema: {},
        ui: widget,
        handler: () => ({ shown: true }),
      }),
      resilientTool({
        name: 'plain',
        description: 'Has no UI.',
        inputSchema: {},
        ui: { resourceUri: 'ui://elsewhere/page.html' },
        handler: () => ({}),
      }),
    ],
    defineJobs: (jobs) => jobs.defineJob('analysis', () => Promise.resolve({ done: true })),
    server: { resources: [guide] },
  });
  return gw;
}

type AnyClient = Pick<ModernClient, 'listResources' | 'readResource' | 'listTools'>;

async function modern(): Promise<AnyClient> {
  const client = new ModernClient(
    { name: 'mcp-test-v2', version: '0.0.1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  closers.push(() => client.close());
  await client.connect(
    new StreamableHTTPClientTransport(gw!.mcpUrl, { requestInit: { headers: as('ada') } }),
  );
  return client;
}

async function v1(): Promise<AnyClient> {
  const tc = await connectClient(gw!.mcpUrl, as('ada'));
  closers.push(() => tc.close());
  return tc.client as unknown as AnyClient;
}

const MCP_APP_META = { ui: { csp: { connectDomains: ['https://api.example.com'] }, prefersBorder: true } };
const APPS_SDK_META = {
  'openai/widgetCSP': { connect_domains: ['https://api.example.com'], resource_domains: [] },
  'openai/widgetPrefersBorder': true,
  'openai/widgetDescription': 'Follows an analysis.',
};

describe.each([
  ['2025-11-25', v1],
  ['2026-07-28', modern],
] as const)('a tool with a UI on %s', (_era, connect) => {
  it('lists both forms of the UI after the app resources, each with its MIME type and _meta', async () => {
    await start();
    const client = await connect();
    expect((await client.listResources()).resources).toEqual([
      { uri: 'test://guide', name: 'guide', mimeType: 'text/markdown' },
      {
        uri: 'ui://test/analysis.html',
        name: 'analysis',
        title: 'Analysis',
        description: 'Follows an analysis.',
        mimeType: 'text/html;profile=mcp-app',
        _meta: MCP_APP_META,
      },
      {
        uri: 'ui://test/analysis.skybridge.html',
        name: 'analysis-apps-sdk',
        title: 'Analysis',
        description: 'Follows an analysis.',
        mimeType: 'text/html+skybridge',
        _meta: APPS_SDK_META,
      },
    ]);
  });

  it('reads each form: the same page, its MIME type and its _meta on the contents', async () => {
    await start();
    const client = await connect();
    expect(await client.readResource({ uri: 'ui://test/analysis.html' })).toMatchObject({
      contents: [
        { uri: 'ui://test/analysis.html', mimeType: RESOURCE_MIME_TYPE, text: PAGE, _meta: MCP_APP_META },
      ],
    });
    expect(await client.readResource({ uri: 'ui://test/analysis.skybridge.html' })).toMatchObject({
      contents: [
        {
          uri: 'ui://test/analysis.skybridge.html',
          mimeType: 'text/html+skybridge',
          text: PAGE,
          _meta: APPS_SDK_META,
        },
      ],
    });
  });

  it('gives the tools both forms: ui.resourceUri, ui/resourceUri, openai/outputTemplate, widgetAccessible', async () => {
    await start();
    const client = await connect();
    const tools = new Map((await client.listTools()).tools.map((tool) => [tool.name, tool]));
    const both = {
      ui: { resourceUri: 'ui://test/analysis.html' },
      [RESOURCE_URI_META_KEY]: 'ui://test/analysis.html',
      'openai/outputTemplate': 'ui://test/analysis.skybridge.html',
      'openai/widgetAccessible': true,
    };
    expect(tools.get('start_analysis')?._meta).toEqual(both);
    expect(tools.get('show')?._meta).toEqual(both);
    // The host side of ext-apps finds the UI as a host would.
    expect(getToolUiResourceUri(tools.get('start_analysis')!)).toBe('ui://test/analysis.html');
    // A resource the app serves itself: the MCP Apps form only.
    expect(tools.get('plain')?._meta).toEqual({
      ui: { resourceUri: 'ui://elsewhere/page.html' },
      [RESOURCE_URI_META_KEY]: 'ui://elsewhere/page.html',
    });
    // The job's own tools may be called from the component (the UI follows its job with them).
    expect(tools.get('get_job_status')?._meta).toEqual({ 'openai/widgetAccessible': true });
    expect(tools.get('cancel_job')?._meta).toEqual({ 'openai/widgetAccessible': true });
  });
});

describe('uiResource', () => {
  it('uses the MIME types of ext-apps and the Apps SDK', () => {
    expect(MCP_APP_MIME_TYPE).toBe(RESOURCE_MIME_TYPE);
    expect(APPS_SDK_MIME_TYPE).toBe('text/html+skybridge');
  });

  it('names every bad option at once', () => {
    expect(() =>
      uiResource({
        uri: 'https://example.com/page.html',
        appsSdkUri: 'ui://x y',
        name: '',
        html: '',
        csp: { connectDomains: [''] },
        deadlineMs: 0,
      }),
    ).toThrow(
      "uiResource: uri must be a ui:// URI without spaces, got 'https://example.com/page.html'; appsSdkUri must be a ui:// URI without spaces, got 'ui://x y'; name must be a non-empty string, got ''; html must be a non-empty HTML string or a function giving one, got ''; csp.connectDomains must be an array of origins (non-empty strings), got ['']; deadlineMs must be an integer in [1, 30000], got 0",
    );
  });

  it('refuses a tool ui that is not a ui:// resource', () => {
    expect(() =>
      resilientTool({
        name: 'x',
        description: 'x',
        inputSchema: {},
        ui: { resourceUri: 'https://example.com' },
        handler: () => ({}),
      }),
    ).toThrow("ui must be a uiResource(...) or { resourceUri: 'ui://…' }");
  });

  it('createMcpServer refuses a UI whose URI another resource has', () => {
    const show = resilientTool({
      name: 'show',
      description: 'x',
      inputSchema: {},
      ui: widget,
      handler: () => ({}),
    });
    const taken = resource({ uri: 'ui://test/analysis.skybridge.html', name: 'other', read: () => 'x' });
    expectOptionsError(
      () => createMcpServer({ name: 's', version: '1', tools: [show], resources: [taken] }),
      {
        owner: 'createMcpServer',
        options: ['tools'],
      },
    );
  });
});
