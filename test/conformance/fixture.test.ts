/**
 * The conformance fixture app (examples/conformance/) answers what the suite expects, on both eras, without
 * the suite: the real gateway (`startGateway`, SQLite in a temporary folder), the SDK v1 client on 2025-11-25
 * and the SDK v2 client pinned to 2026-07-28. `npm run conformance` is the full check; this keeps the fixtures
 * honest in the ordinary test run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConformanceApp } from '../../examples/conformance/app.js';
import { RED_PIXEL_PNG, silentWav } from '../../examples/conformance/content.js';
import { ERROR_TEXT, SIMPLE_TEXT } from '../../examples/conformance/tools.js';
import { startGateway } from '../../src/entries/gateway.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;

let dir: string;
let gateway: Gateway;
let legacy: LegacyClient;
let modern: ModernClient;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'breakwater-fixture-'));
  gateway = await startGateway({
    app: createConformanceApp(),
    store: join(dir, 'breakwater.db'),
    port: 0,
    log: () => undefined,
    graceMs: 1_000,
  });
  legacy = new LegacyClient({ name: 'fixture-v1', version: '1.0.0' });
  await legacy.connect(new LegacyTransport(new URL(gateway.mcpUrl)));
  modern = new ModernClient(
    { name: 'fixture-v2', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await modern.connect(new ModernTransport(new URL(gateway.mcpUrl)));
});

afterAll(async () => {
  await modern?.close();
  await legacy?.close();
  await gateway?.close();
  rmSync(dir, { recursive: true, force: true });
});

const eras = () =>
  [
    ['2025-11-25 (SDK v1)', legacy],
    ['2026-07-28 (SDK v2)', modern],
  ] as const;

describe('the conformance fixture app', () => {
  it('lists the fixture tools in order', async () => {
    const expected = [
      'test_simple_text',
      'test_error_handling',
      'test_tool_with_progress',
      'test_reconnection',
      'test_image_content',
      'test_audio_content',
      'test_embedded_resource',
      'test_multiple_content_types',
      'test_tool_with_logging',
      'test_logging_tool',
      'json_schema_2020_12_tool',
      'test_custom_header',
      'greet',
      'slow_compute',
      'failing_job',
      'confirm_delete',
      'multi_input',
      'protocol_error_job',
      'test_tool_with_task',
      'test_input_required_result_elicitation',
      'test_input_required_result_sampling',
      'test_input_required_result_list_roots',
      'test_input_required_result_request_state',
      'test_input_required_result_multiple_inputs',
      'test_input_required_result_multi_round',
      'test_input_required_result_tampered_state',
      'test_input_required_result_capabilities',
      'test_missing_capability',
      'test_streaming_elicitation',
      'test_sampling',
      'test_elicitation',
      'test_elicitation_sep1034_defaults',
      'test_elicitation_sep1330_enums',
      // Added by the gateway with job tools.
      'get_job_status',
      'cancel_job',
      'respond_to_job',
    ];
    expect((await legacy.listTools()).tools.map((t) => t.name)).toEqual(expected);
    expect((await modern.listTools()).tools.map((t) => t.name)).toEqual(expected);
  });

  it('answers the text, error and content fixtures as the suite expects, on both eras', async () => {
    for (const [era, client] of eras()) {
      const call = (name: string) => client.callTool({ name, arguments: {} });
      expect((await call('test_simple_text')).content, era).toEqual([{ type: 'text', text: SIMPLE_TEXT }]);
      const failed = await call('test_error_handling');
      expect([failed.isError, failed.content], era).toEqual([true, [{ type: 'text', text: ERROR_TEXT }]]);
      expect((await call('test_image_content')).content, era).toEqual([
        { type: 'image', data: RED_PIXEL_PNG, mimeType: 'image/png' },
      ]);
      expect((await call('test_audio_content')).content, era).toEqual([
        { type: 'audio', data: silentWav(), mimeType: 'audio/wav' },
      ]);
      expect((await call('test_embedded_resource')).content, era).toEqual([
        {
          type: 'resource',
          resource: {
            uri: 'test://embedded-resource',
            mimeType: 'text/plain',
            text: 'This is an embedded resource content.',
          },
        },
      ]);
      expect(
        ((await call('test_multiple_content_types')).content as { type: string }[]).map((b) => b.type),
        era,
      ).toEqual(['text', 'image', 'resource']);
    }
  });

  it('reports progress 0, 50 and 100 of 100 on both eras', async () => {
    const params = { name: 'test_tool_with_progress', arguments: {} };
    for (const era of ['2025-11-25 (SDK v1)', '2026-07-28 (SDK v2)']) {
      const seen: [number, number | undefined][] = [];
      const onprogress = (p: { progress: number; total?: number }) => seen.push([p.progress, p.total]);
      // The v1 client takes (params, resultSchema, options); the v2 client (params, options).
      const result = era.startsWith('2025')
        ? await legacy.callTool(params, undefined, { onprogress })
        : await modern.callTool(params, { onprogress });
      expect(result.isError, era).toBeUndefined();
      expect(seen, era).toEqual([
        [0, 100],
        [50, 100],
        [100, 100],
      ]);
    }
  });
});
