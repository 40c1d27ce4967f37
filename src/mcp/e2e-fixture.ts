/**
 * The end-to-end fixture of mcp/'s tests (not a test file itself): a gateway with a few resilient tools and
 * the `deep_analysis` job tool, whose job the test steps through with two gates, and a connected SDK client.
 * `useGateway()` registers the beforeEach/afterEach hooks of the calling test file.
 */
import { afterEach, beforeEach, expect } from 'vitest';
import { z } from 'zod';
import { BreakwaterError } from '../core/index.js';
import type { Jobs } from '../jobs/index.js';
import { jobTool } from './job-tools.js';
import { connectClient, gate, startGateway, type Gateway, type TestClient } from './test-support.js';
import { resilientTool, type McpTool } from './tool.js';

/** What a test sees; fields are replaced before every test. */
export interface Fixture {
  gw: Gateway;
  tc: TestClient;
  /** Opened by the job once it reported its first progress and partial result. */
  started: ReturnType<typeof gate>;
  /** Opened by the test to let the job finish. */
  release: ReturnType<typeof gate>;
  /** What `onError` received. */
  reported: { error: unknown; tool?: string }[];
}

/** Registers the hooks and returns the fixture they fill. */
export function useGateway(): Fixture {
  const f = { reported: [] } as unknown as Fixture;

  function defineJobs(jobs: Jobs): void {
    jobs.defineJob<{ recipient: string }>('analysis', async ({ payload, progress, partial, signal }) => {
      await progress(1, 4, 'reading the catalog');
      await partial({ draft: `scarf for ${payload.recipient}` });
      f.started.open();
      await new Promise<void>((resolve, reject) => {
        void f.release.promise.then(resolve);
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
      await progress(3, 4, 'ranking');
      await progress(2, 4, 'a step back'); // stored (the step changed), never forwarded (not increasing)
      await progress(4, 4, 'done');
      return { gifts: ['scarf', 'book'] };
    });
  }

  beforeEach(async () => {
    f.release = gate();
    f.started = gate();
    f.reported = [];
    f.gw = await startGateway({
      tools,
      defineJobs,
      server: { onError: (error, context) => f.reported.push({ error, tool: context.tool }) },
    });
    f.tc = await connectClient(f.gw.mcpUrl, { 'x-correlation-id': 'corr-42' });
  });

  afterEach(async () => {
    f.release.open();
    await f.tc.close();
    await f.gw.close();
  });

  return f;
}

/** Calls a tool with the fixture's client. */
export function call(f: Fixture, name: string, args: Record<string, unknown> = {}) {
  return f.tc.client.callTool({ name, arguments: args });
}

/** The job id of a job tool's answer. */
export function jobIdOf(result: Awaited<ReturnType<typeof call>>): string {
  const id = (result.structuredContent as Record<string, unknown> | undefined)?.['job_id'];
  if (typeof id !== 'string') throw new Error(`not a job handle: ${JSON.stringify(result)}`);
  return id;
}

/** Follows the job's events until its terminal one (the store's own push, no polling), then checks its status. */
export async function waitForStatus(f: Fixture, id: string, status: string): Promise<void> {
  for await (const _event of f.gw.jobs.events(id)) {
    // drain until the terminal event
  }
  expect((await f.gw.jobs.get(id))?.status).toBe(status);
}

function tools(): McpTool[] {
  return [
    resilientTool({
      name: 'echo',
      description: 'Echoes its text.',
      inputSchema: { text: z.string().min(1) },
      annotations: { readOnlyHint: true },
      handler: ({ text }, ctx) => ({ echoed: text, correlation_id: ctx.correlationId }),
    }),
    resilientTool({
      name: 'hang',
      description: 'Never answers and ignores its signal.',
      inputSchema: {},
      deadlineMs: 200,
      annotations: { readOnlyHint: true },
      handler: () => new Promise<never>(() => undefined),
    }),
    resilientTool({
      name: 'hang_write',
      description: 'A write that never answers.',
      inputSchema: {},
      deadlineMs: 200,
      handler: () => new Promise<never>(() => undefined),
    }),
    resilientTool({
      name: 'breaker',
      description: 'Its breaker is open.',
      inputSchema: {},
      handler: () => {
        throw new BreakwaterError('circuit_open', { retryAfterMs: 20_000, source: 'commerce' });
      },
    }),
    resilientTool({
      name: 'gifts',
      description: 'The gift service is busy (it answered 503).',
      inputSchema: {},
      handler: async () => {
        throw new BreakwaterError('upstream_unavailable', {
          message: 'The gift recommendation service is busy right now; try again shortly.',
          details: { dependency_code: 'gift_service_busy', upstream_status: 503 },
        });
      },
    }),
    resilientTool({
      name: 'bug',
      description: 'Has a bug.',
      inputSchema: {},
      handler: () => {
        throw new TypeError("Cannot read properties of undefined (reading 'secret') at /srv/app/db.ts");
      },
    }),
    jobTool({
      name: 'deep_analysis',
      description: 'Analyses gift ideas in the background.',
      inputSchema: { recipient: z.string() },
      jobType: 'analysis',
    }),
  ];
}
