/**
 * Both MCP protocol eras against one GiftGenius gateway (docs/mcp.md#both-protocol-revisions): the real
 * gateway (`startGateway`, SQLite, the example services, API keys in its store), the SDK v2 client pinned to
 * 2026-07-28 and the v1 client on 2025-11-25, each with its own key behind the real HTTP edge.
 */
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { createGiftGeniusApp } from '../../examples/giftgenius/app.js';
import { loadCatalog, recommendGifts } from '../../examples/giftgenius/services/index.js';
import { startGateway, type Gateway } from '../../src/gateway/index.js';
import { createApiKeys } from '../../src/http/keys/index.js';
import { openStore } from '../../src/store/index.js';
import { FAST_SETTINGS, startBackends, tempDb, useCleanups } from './support.js';

const defer = useCleanups();

interface Setup {
  gw: Gateway;
  keys: { ada: string; bob: string };
}

async function setup(): Promise<Setup> {
  const backends = await startBackends(defer);
  const store = await openStore({ url: `sqlite:${tempDb(defer)}` });
  defer(() => store.close());
  const keys = createApiKeys({ store });
  const ada = await keys.create({ name: 'ada', scopes: ['mcp', 'jobs'] });
  const bob = await keys.create({ name: 'bob', scopes: ['mcp', 'jobs'] });
  const gw = await startGateway({
    app: createGiftGeniusApp({ ...FAST_SETTINGS, ...backends.urls }),
    store,
    port: 0,
    env: {},
    log: () => undefined,
  });
  defer(() => gw.close());
  return { gw, keys: { ada: ada.key, bob: bob.key } };
}

/** The SDK v2 client, pinned to 2026-07-28, with `key` as its bearer credential. */
async function modern(gw: Gateway, key: string): Promise<ModernClient> {
  const client = new ModernClient(
    { name: 'giftgenius-e2e-v2', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  const transport = new ModernTransport(new URL(`${gw.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  defer(() => client.close());
  return client;
}

/** The SDK v1 client on 2025-11-25 (a session), with `key` as its bearer credential. */
async function legacy(
  gw: Gateway,
  key: string,
): Promise<{ client: LegacyClient; transport: LegacyTransport }> {
  const transport = new LegacyTransport(new URL(`${gw.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
  });
  const client = new LegacyClient({ name: 'giftgenius-e2e-v1', version: '1.0.0' });
  await client.connect(transport);
  defer(async () => {
    await transport.terminateSession().catch(() => undefined);
    await client.close();
  });
  return { client, transport };
}

const request = { interests: ['coffee', 'travel'], budget_usd: 40, recipient: 'Sam', limit: 3 };

describe('GiftGenius on MCP 2026-07-28 and 2025-11-25 at once', () => {
  it('the v2 client on 2026-07-28 and the v1 client on 2025-11-25 get the same gifts from one gateway', async () => {
    const { gw, keys } = await setup();
    const expected = { gifts: recommendGifts(loadCatalog(), request) };

    const v2 = await modern(gw, keys.ada);
    expect(v2.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const viaV2 = await v2.callTool({ name: 'suggest_gifts', arguments: request });
    expect(viaV2.isError).toBeUndefined();
    expect(viaV2.structuredContent).toEqual(expected);

    const v1 = await legacy(gw, keys.ada);
    const viaV1 = await v1.client.callTool({ name: 'suggest_gifts', arguments: request });
    expect(v1.transport.sessionId).toBeDefined();
    expect(viaV1.structuredContent).toEqual(expected);
  });

  it('both eras list and read the ordering guide and the widget through the edge, with the same contents', async () => {
    const { gw, keys } = await setup();
    const v2 = await modern(gw, keys.ada);
    const { client: v1 } = await legacy(gw, keys.bob);
    const listing = {
      uri: 'giftgenius://guide/ordering',
      name: 'ordering-guide',
      title: 'How to order a gift',
      description: 'The steps from a suggestion to an order, and what to do when an order times out.',
      mimeType: 'text/markdown',
    };
    const widget = {
      name: 'analysis-widget',
      title: 'Deep gift analysis',
      description:
        'Follows a deep gift analysis: its steps, three draft gifts, the final list, and a Cancel button.',
    };
    const listings = [
      listing,
      {
        uri: 'ui://giftgenius/analysis.html',
        ...widget,
        mimeType: 'text/html;profile=mcp-app',
        _meta: { ui: { prefersBorder: true } },
      },
      {
        uri: 'ui://giftgenius/analysis.skybridge.html',
        ...widget,
        name: 'analysis-widget-apps-sdk',
        mimeType: 'text/html+skybridge',
        _meta: {
          'openai/widgetCSP': { connect_domains: [], resource_domains: [] },
          'openai/widgetPrefersBorder': true,
          'openai/widgetDescription': widget.description,
        },
      },
    ];
    expect((await v2.listResources()).resources).toEqual(listings);
    expect((await v1.listResources()).resources).toEqual(listings);
    const [modernPage, legacyPage] = [
      await v2.readResource({ uri: 'ui://giftgenius/analysis.html' }),
      await v1.readResource({ uri: 'ui://giftgenius/analysis.html' }),
    ];
    expect(modernPage.contents).toEqual(legacyPage.contents);
    expect(modernPage.contents).toMatchObject([
      { mimeType: 'text/html;profile=mcp-app', text: expect.stringMatching(/^<!doctype html>/) as unknown },
    ]);
    const [modernRead, legacyRead] = [
      await v2.readResource({ uri: listing.uri }),
      await v1.readResource({ uri: listing.uri }),
    ];
    expect(modernRead.contents).toEqual(legacyRead.contents);
    expect(modernRead.contents).toMatchObject([
      {
        uri: listing.uri,
        mimeType: 'text/markdown',
        text: expect.stringMatching(/^# Ordering a gift with GiftGenius\n/) as unknown,
      },
    ]);
  });

  it('a job started on 2026-07-28 is its caller’s: a stranger’s status and cancel find no job', async () => {
    const { gw, keys } = await setup();
    const ada = await modern(gw, keys.ada);
    const started = await ada.callTool({ name: 'start_deep_analysis', arguments: request });
    expect(started.isError).toBeUndefined();
    const jobId = (started.structuredContent as { job_id: string }).job_id;

    const bob = await modern(gw, keys.bob);
    for (const name of ['get_job_status', 'cancel_job']) {
      const refused = await bob.callTool({ name, arguments: { job_id: jobId } });
      expect(refused).toMatchObject({
        isError: true,
        content: [{ type: 'text', text: `There is no job ${jobId}.` }],
      });
    }
    const own = await ada.callTool({ name: 'get_job_status', arguments: { job_id: jobId } });
    expect(own.isError).toBeUndefined();
    expect(own.structuredContent).toMatchObject({ job_id: jobId });
  });

  it('a 2026-07-28 request without a credential is refused by the edge: 401 with its challenge', async () => {
    const { gw } = await setup();
    const response = await fetch(`${gw.url}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/list',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/list',
        params: {
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      }),
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer /);
  });
});
