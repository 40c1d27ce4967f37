/**
 * `BREAKWATER_MCP_STATE_KEY`: gateways that share it accept each other's `requestState`, so a 2026-07-28 call
 * that asks the user (`input_required`) may be retried through any of them; a gateway with another key
 * refuses the state (-32602) and runs nothing. Real gateways (`startGateway`) on one SQLite file, raw
 * JSON-RPC over HTTP (the suite's fixture tool `test_input_required_result_request_state`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConformanceApp } from '../../examples/conformance/app.js';
import { startGateway } from '../../src/entries/gateway.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;
interface RpcAnswer {
  result?: {
    resultType: string;
    inputRequests: Record<string, unknown>;
    requestState: string;
    content?: unknown;
  };
  error?: { code: number };
}

const SHARED = 'a-shared-state-key-of-32-bytes-or-more!';
let dir: string;
const gateways: Gateway[] = [];

async function gateway(key: string): Promise<Gateway> {
  const started = await startGateway({
    app: createConformanceApp(),
    store: join(dir, 'breakwater.db'),
    port: 0,
    log: () => undefined,
    graceMs: 500,
    env: { BREAKWATER_MCP_STATE_KEY: key },
  });
  gateways.push(started);
  return started;
}

async function call(gw: Gateway, params: Record<string, unknown>) {
  const response = await fetch(gw.mcpUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'test_input_required_result_request_state',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'test_input_required_result_request_state',
        arguments: {},
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
        },
      },
    }),
  });
  const text = await response.text();
  const json = text.startsWith('{')
    ? text
    : text
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5))
        .find((line) => line.includes('"id"'))!;
  return { status: response.status, body: JSON.parse(json) as RpcAnswer };
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'breakwater-state-key-'));
});

afterAll(async () => {
  for (const gw of gateways.splice(0)) await gw.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('BREAKWATER_MCP_STATE_KEY', () => {
  it('a requestState minted by one gateway is accepted by another with the same key, refused by one without', async () => {
    const a = await gateway(SHARED);
    const b = await gateway(SHARED);
    const other = await gateway('another-key-of-32-bytes-or-more-here');

    const first = await call(a, {});
    expect(first.body.result!.resultType).toBe('input_required');
    const [key] = Object.keys(first.body.result!.inputRequests);
    const retry = {
      inputResponses: { [key!]: { action: 'accept', content: { ok: true } } },
      requestState: first.body.result!.requestState,
    };

    const refused = await call(other, retry);
    expect(refused.body.result).toBeUndefined();
    expect(refused.body.error?.code).toBe(-32602);

    const done = await call(b, retry);
    expect(done.status).toBe(200);
    expect(done.body.result!.resultType).toBe('complete');
    expect(done.body.result!.content).toEqual([{ type: 'text', text: 'state-ok: confirmed=true' }]);
  });
});
