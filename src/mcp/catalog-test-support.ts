/**
 * Helpers of the catalog tests (not a test file itself): both eras' SDK clients over real HTTP, closed after
 * each test, and the JSON-RPC error of a rejected call.
 */
import { Client as ModernClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { as } from '../../test/support/principals.js';
import { connectClient, type TestClient } from './test-support.js';

/** Closers of the clients opened by {@link v1Client} and {@link modernClient}; run them after each test. */
export const clientClosers: (() => Promise<unknown>)[] = [];

/** The SDK 1.x client on a 2025-11-25 session, as `caller`. */
export async function v1Client(url: URL, caller: string): Promise<TestClient['client']> {
  const tc = await connectClient(url, as(caller));
  clientClosers.push(() => tc.close());
  return tc.client;
}

/** The SDK v2 client pinned to 2026-07-28, as `caller`. */
export async function modernClient(url: URL, caller: string): Promise<ModernClient> {
  const client = new ModernClient(
    { name: 'mcp-test-v2', version: '0.0.1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  clientClosers.push(() => client.close());
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: as(caller) } }));
  return client;
}

/** The JSON-RPC error a call rejected with (fails when it resolved). */
export async function errorOf(
  promise: Promise<unknown>,
): Promise<{ code: number; message: string; data: unknown }> {
  try {
    await promise;
  } catch (error) {
    const { code, message, data } = error as { code: number; message: string; data: unknown };
    return { code, message, data };
  }
  throw new Error('expected a JSON-RPC error');
}
