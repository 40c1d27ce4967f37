import { LOG_LEVEL_META_KEY } from '@modelcontextprotocol/client';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { clientClosers, modernClient, v1Client } from './catalog-test-support.js';
import { resource } from './resource.js';
import { MAX_LOG_DATA_CHARS, MAX_LOGS_PER_CALL } from './run.js';
import { startGateway, type Gateway } from './test-support.js';
import { resilientTool } from './tool.js';

/**
 * `ctx.log` over real HTTP: `notifications/message` on the request's own stream, sent only at or above the
 * level the client asked for (`logging/setLevel` on a 2025 session, the request's `_meta` on 2026-07-28).
 */

let gw: Gateway | undefined;

afterEach(async () => {
  for (const close of clientClosers.splice(0)) await close().catch(() => undefined);
  await gw?.close();
  gw = undefined;
});

const chatty = resilientTool({
  name: 'chatty',
  description: 'Logs at three levels.',
  inputSchema: {},
  handler: (_args, ctx) => {
    ctx.log('debug', 'starting');
    ctx.log('info', { step: 'working', items: 3 });
    ctx.log('error', 'almost failed');
    return 'done';
  },
});

const flood = resilientTool({
  name: 'flood',
  description: 'Logs too much.',
  inputSchema: {},
  handler: (_args, ctx) => {
    ctx.log('info', 'x'.repeat(20_000));
    for (let i = 1; i < MAX_LOGS_PER_CALL + 20; i++) ctx.log('info', i);
    return 'done';
  },
});

const noisy = resource({
  uri: 'gift://noisy',
  name: 'noisy',
  read: (ctx) => {
    ctx.log('warning', 'read from cache');
    return 'body';
  },
});

async function start(): Promise<Gateway> {
  gw = await startGateway({ tools: () => [chatty, flood], server: { resources: [noisy] } });
  return gw;
}

describe('ctx.log on a 2025-11-25 session', () => {
  it('sends nothing until the client sets a level, then what is at or above it, in order', async () => {
    await start();
    const client = await v1Client(gw!.mcpUrl, 'ada');
    const seen: unknown[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void seen.push(n.params));
    await client.callTool({ name: 'chatty', arguments: {} });
    expect(seen).toEqual([]);
    await client.setLoggingLevel('info');
    await client.callTool({ name: 'chatty', arguments: {} });
    await client.readResource({ uri: 'gift://noisy' });
    expect(seen).toEqual([
      { level: 'info', data: { step: 'working', items: 3 } },
      { level: 'error', data: 'almost failed' },
      { level: 'warning', data: 'read from cache' },
    ]);
  });

  it('sends at most 100 messages per call and cuts a big one to 16 KiB of JSON', async () => {
    await start();
    const client = await v1Client(gw!.mcpUrl, 'ada');
    const seen: { data: unknown }[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void seen.push(n.params));
    await client.setLoggingLevel('debug');
    await client.callTool({ name: 'flood', arguments: {} });
    expect(seen).toHaveLength(MAX_LOGS_PER_CALL);
    // The big one is sent as its JSON text, cut: the opening quote and 16 383 of its characters.
    expect(seen[0]).toEqual({ level: 'info', data: `"${'x'.repeat(MAX_LOG_DATA_CHARS - 1)}` });
    expect(seen[99]).toEqual({ level: 'info', data: 99 });
  });

  it('keeps each session its own level', async () => {
    await start();
    const loud = await v1Client(gw!.mcpUrl, 'ada');
    const quiet = await v1Client(gw!.mcpUrl, 'ada');
    const heard: string[] = [];
    loud.setNotificationHandler(
      LoggingMessageNotificationSchema,
      (n) => void heard.push(`loud ${n.params.level}`),
    );
    quiet.setNotificationHandler(
      LoggingMessageNotificationSchema,
      (n) => void heard.push(`quiet ${n.params.level}`),
    );
    await loud.setLoggingLevel('debug');
    await quiet.setLoggingLevel('error');
    await loud.callTool({ name: 'chatty', arguments: {} });
    await quiet.callTool({ name: 'chatty', arguments: {} });
    expect(heard).toEqual(['loud debug', 'loud info', 'loud error', 'quiet error']);
  });
});

describe('ctx.log on 2026-07-28', () => {
  it('sends only for a request whose _meta names a level, at or above it', async () => {
    await start();
    const client = await modernClient(gw!.mcpUrl, 'ada');
    const seen: unknown[] = [];
    client.setNotificationHandler('notifications/message', (n) => void seen.push(n.params));
    await client.callTool({ name: 'chatty', arguments: {} });
    expect(seen).toEqual([]);
    await client.callTool({ name: 'chatty', arguments: {}, _meta: { [LOG_LEVEL_META_KEY]: 'info' } });
    await client.readResource({ uri: 'gift://noisy', _meta: { [LOG_LEVEL_META_KEY]: 'error' } });
    await client.readResource({ uri: 'gift://noisy', _meta: { [LOG_LEVEL_META_KEY]: 'debug' } });
    expect(seen).toEqual([
      { level: 'info', data: { step: 'working', items: 3 } },
      { level: 'error', data: 'almost failed' },
      { level: 'warning', data: 'read from cache' },
    ]);
  });
});
