import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { JobStore, StreamEventStore } from '../store/index.js';
import { createDurableEventStore } from './event-store.js';
import { gate, startGateway, tempDir, type Gateway } from './test-support.js';
import { resilientTool } from './tool.js';

let gw: Gateway | undefined;
const dirs: Array<{ remove(): void }> = [];

afterEach(async () => {
  await gw?.close();
  gw = undefined;
  for (const dir of dirs.splice(0)) dir.remove();
});

describe('ctx.closeStream: a 2025 session polls for the result (SEP-1699)', () => {
  it('the stream ends mid-call; the client reconnects with Last-Event-ID and gets the progress and result once', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const release = gate();
    const closed = gate();
    const started = await startGateway({
      dbPath: `${dir.dir}/store.db`,
      tools: () => [
        resilientTool({
          name: 'long_report',
          description: 'Reports, ends its stream, then answers when released.',
          inputSchema: {},
          handler: async (_args, ctx) => {
            await ctx.progress(1, 2, 'half way');
            ctx.closeStream();
            closed.open();
            await release.promise;
            return { report: 'ready' };
          },
          toText: (result) => result.report,
        }),
      ],
      server: {
        eventStore: (sessionId) =>
          createDurableEventStore(started.store as JobStore & StreamEventStore, { scope: sessionId }),
      },
    });
    gw = started;

    const resumed: string[] = [];
    const observed: typeof fetch = async (input, init) => {
      const headers = new Headers(init?.headers);
      const lastEventId = headers.get('last-event-id');
      if ((init?.method ?? 'GET') === 'GET' && lastEventId !== null) {
        resumed.push(lastEventId);
        // The call is still running when the client comes back: let it answer now.
        release.open();
      }
      return fetch(input, init);
    };
    const transport = new StreamableHTTPClientTransport(gw.mcpUrl, { fetch: observed });
    const client = new Client({ name: 'poller', version: '0.0.1' }, { capabilities: {} });
    await client.connect(transport);
    const progress: Array<{ progress: number; total?: number; message?: string }> = [];
    const result = await client.callTool({ name: 'long_report', arguments: {} }, undefined, {
      onprogress: (p) => progress.push({ progress: p.progress, total: p.total, message: p.message }),
    });
    await closed.promise;

    expect(result.content).toEqual([{ type: 'text', text: 'ready' }]);
    expect(result.structuredContent).toEqual({ report: 'ready' });
    expect(progress).toEqual([{ progress: 1, total: 2, message: 'half way' }]);
    // One reconnection, resuming after the event the stream ended on.
    expect(resumed).toHaveLength(1);
    expect(resumed[0]).toMatch(/^\d+-\d+$/);
    await transport.terminateSession().catch(() => undefined);
    await client.close();
  });
});
