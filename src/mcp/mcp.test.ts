import { CreateTaskResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { call, useGateway } from './e2e-fixture.js';

const f = useGateway();

describe('tools/list', () => {
  it('lists every tool with its JSON schema, the built-in job tools and task support of job tools', async () => {
    const { tools: listed } = await f.tc.client.listTools();
    expect(listed.map((t) => t.name)).toEqual([
      'echo',
      'hang',
      'hang_write',
      'breaker',
      'gifts',
      'bug',
      'deep_analysis',
      'get_job_status',
      'cancel_job',
      'respond_to_job',
    ]);
    const echo = listed.find((t) => t.name === 'echo')!;
    expect(echo.inputSchema).toEqual({
      type: 'object',
      properties: { text: { type: 'string', minLength: 1 } },
      required: ['text'],
    });
    expect(echo.annotations).toEqual({ readOnlyHint: true });
    expect(echo.execution).toBeUndefined();
    expect(listed.find((t) => t.name === 'deep_analysis')!.execution).toEqual({ taskSupport: 'optional' });
  });
});

describe('resilient tools', () => {
  it('answers a success with the value as text and as structuredContent, with the caller correlation id', async () => {
    const result = await call(f, 'echo', { text: 'hello' });
    expect(result).toEqual({
      content: [{ type: 'text', text: '{"echoed":"hello","correlation_id":"corr-42"}' }],
      structuredContent: { echoed: 'hello', correlation_id: 'corr-42' },
    });
  });

  it('answers a handler that hangs with deadline_exceeded at its deadline, without waiting for it', async () => {
    const result = await call(f, 'hang');
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toEqual({
      error: {
        code: 'deadline_exceeded',
        category: 'deadline_exceeded',
        message: 'The request ran out of time before it could finish; try again shortly.',
        retryable: true,
        retry_after_ms: null,
        outcome: 'failed',
      },
    });
    expect(result.content).toEqual([
      { type: 'text', text: 'The request ran out of time before it could finish; try again shortly.' },
    ]);
  });

  it('says the outcome is unknown when a tool that may write is cut off by its deadline', async () => {
    const result = await call(f, 'hang_write');
    expect(result.structuredContent).toEqual({
      error: {
        code: 'deadline_exceeded',
        category: 'deadline_exceeded',
        message:
          'The request ran out of time before it finished, so it may or may not have taken effect; check before trying again.',
        retryable: false,
        retry_after_ms: null,
        outcome: 'unknown',
      },
    });
  });

  it('answers an open breaker with circuit_open and retry_after_ms', async () => {
    const result = await call(f, 'breaker');
    const sentence =
      'The service is temporarily unavailable after repeated failures; try again in about 20 seconds.';
    expect(result).toEqual({
      content: [{ type: 'text', text: sentence }],
      structuredContent: {
        error: {
          code: 'circuit_open',
          category: 'circuit_open',
          message: sentence,
          retryable: true,
          retry_after_ms: 20_000,
          outcome: 'failed',
        },
      },
      isError: true,
    });
  });

  it('uses the dependency code of an upstream error, with the generic code as category', async () => {
    const result = await call(f, 'gifts');
    expect(result.structuredContent).toEqual({
      error: {
        code: 'gift_service_busy',
        category: 'upstream_unavailable',
        message: 'The gift recommendation service is busy right now; try again shortly.',
        retryable: true,
        retry_after_ms: null,
        outcome: 'failed',
      },
    });
  });

  it('turns a programming error into internal_error with a generic sentence and reports it', async () => {
    const result = await call(f, 'bug');
    expect(result.content).toEqual([
      {
        type: 'text',
        text: 'Something went wrong inside the gateway; this is a bug, not a temporary failure.',
      },
    ]);
    expect(JSON.stringify(result)).not.toContain('secret');
    expect((result.structuredContent as { error: { code: string } }).error.code).toBe('internal_error');
    expect(f.reported.map((r) => [r.tool, (r.error as Error).name])).toEqual([['bug', 'TypeError']]);
  });

  it('answers invalid arguments with an invalid_payload result the model can correct from', async () => {
    const result = await call(f, 'echo', { text: 7 });
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([
      {
        type: 'text',
        text: 'The arguments are not valid: text: Invalid input: expected string, received number.',
      },
    ]);
  });

  it('answers an unknown tool with a JSON-RPC invalid params error', async () => {
    const error = await call(f, 'nope').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpError);
    expect((error as McpError).code).toBe(-32602);
  });

  it('refuses a task-augmented call of a tool without task support (method not found)', async () => {
    const error = await f.tc.client
      .request(
        { method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } },
        CreateTaskResultSchema,
        {
          task: {},
        },
      )
      .catch((e: unknown) => e);
    expect((error as McpError).code).toBe(-32601);
  });
});
