import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { BreakwaterError, Deadline, FakeClock, isBreakwaterError } from '../core/index.js';
import {
  correlationIdFrom,
  runUnderDeadline,
  type CallScope,
  type ProgressParams,
  type Settled,
} from './run.js';
import { jobTool } from './job-tools.js';
import { resilientTool, type ToolContext } from './tool.js';
import { optionsErrorOf } from '../../test/support/options.js';

const tool = (deadlineMs = 200, readOnlyHint?: boolean) =>
  resilientTool({
    name: 't',
    description: 'test tool',
    inputSchema: {},
    deadlineMs,
    annotations: readOnlyHint === undefined ? undefined : { readOnlyHint },
    handler: () => undefined,
  });

function scope(overrides: Partial<CallScope> = {}): CallScope & { sent: ProgressParams[] } {
  const sent: ProgressParams[] = [];
  return {
    signal: new AbortController().signal,
    correlationId: 'c-1',
    progressToken: 'tok',
    sendProgress: async (params) => {
      sent.push(params);
    },
    sent,
    ...overrides,
  };
}

/** Tracks whether a promise settled, without awaiting it. */
function track<T>(promise: Promise<T>): { settled: () => T | undefined } {
  let value: T | undefined;
  void promise.then((v) => (value = v));
  return { settled: () => value };
}

describe('runUnderDeadline', () => {
  it('settles with deadline_exceeded exactly at the deadline while the work ignores its signal', async () => {
    const clock = new FakeClock();
    let seen: ToolContext | undefined;
    const run = track(
      runUnderDeadline(tool(200, true), scope(), clock, (ctx) => {
        seen = ctx;
        return new Promise<never>(() => undefined);
      }),
    );
    await clock.tickAsync(199);
    expect(run.settled()).toBeUndefined();
    expect(seen!.signal.aborted).toBe(false);
    await clock.tickAsync(1);
    const settled = run.settled() as Settled<never> & { ok: false };
    expect(settled.ok).toBe(false);
    expect(settled.error).toBeInstanceOf(BreakwaterError);
    expect((settled.error as BreakwaterError).code).toBe('deadline_exceeded');
    expect((settled.error as BreakwaterError).outcome).toBe('failed');
    expect((settled.error as BreakwaterError).details).toEqual({ timeout_ms: 200 });
    // The work's signal aborted with the same error, so cooperative work stops too.
    expect(seen!.signal.reason).toBe(settled.error);
  });

  it('marks the outcome unknown when the tool is not declared read-only', async () => {
    const clock = new FakeClock();
    const run = track(runUnderDeadline(tool(50), scope(), clock, () => new Promise<never>(() => undefined)));
    await clock.tickAsync(50);
    const error = (run.settled() as { error: BreakwaterError }).error;
    expect(error.outcome).toBe('unknown');
    expect(error.retryable).toBe(false);
  });

  it('cut off after naming its operation: the answer carries the operation id and lookup, outcome unknown', async () => {
    const clock = new FakeClock();
    const reconcile = { method: 'GET', path: '/orders?idempotency_key=op_7' };
    const run = track(
      runUnderDeadline(tool(50, true), scope(), clock, (ctx) => {
        ctx.operation('op_7', reconcile);
        return new Promise<never>(() => undefined);
      }),
    );
    await clock.tickAsync(50);
    const error = (run.settled() as { error: BreakwaterError }).error;
    expect([error.code, error.outcome, error.operationId, error.details]).toEqual([
      'deadline_exceeded',
      'unknown',
      'op_7',
      { timeout_ms: 50, reconcile },
    ]);
  });

  it('runs the work under a core Deadline and with the absolute deadline in the context', async () => {
    const clock = new FakeClock(1_000_000);
    const settled = await runUnderDeadline(tool(300), scope(), clock, (ctx) => ({
      remaining: Deadline.remaining(),
      at: Deadline.at(),
      deadline: ctx.deadline,
      correlationId: ctx.correlationId,
    }));
    expect(settled).toEqual({
      ok: true,
      value: { remaining: 300, at: 1_000_300, deadline: 1_000_300, correlationId: 'c-1' },
    });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('settles with the work failure, a synchronous throw included, and clears its timer', async () => {
    const clock = new FakeClock();
    const boom = new TypeError('boom');
    const settled = await runUnderDeadline(tool(), scope(), clock, () => {
      throw boom;
    });
    expect(settled).toEqual({ ok: false, error: boom });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('settles with canceled when the caller aborts, and with the reason when it is a BreakwaterError', async () => {
    const clock = new FakeClock();
    const controller = new AbortController();
    const run = track(
      runUnderDeadline(
        tool(),
        scope({ signal: controller.signal }),
        clock,
        () => new Promise<never>(() => undefined),
      ),
    );
    controller.abort('client went away');
    await clock.tickAsync(0);
    const error = (run.settled() as { error: BreakwaterError }).error;
    expect(isBreakwaterError(error) && error.code).toBe('canceled');
    expect(clock.pendingTimers()).toBe(0);

    const own = new BreakwaterError('overloaded');
    const aborted = AbortSignal.abort(own);
    expect(await runUnderDeadline(tool(), scope({ signal: aborted }), clock, () => 1)).toEqual({
      ok: false,
      error: own,
    });
  });

  it('sends only increasing finite progress, and nothing after the answer or without a token', async () => {
    const clock = new FakeClock();
    const s = scope();
    let late: ToolContext | undefined;
    await runUnderDeadline(tool(), s, clock, async (ctx) => {
      late = ctx;
      await ctx.progress(1, 10, 'one');
      await ctx.progress(1, 10, 'again');
      await ctx.progress(0.5);
      await ctx.progress(Number.NaN);
      await ctx.progress(3, Number.POSITIVE_INFINITY);
      await ctx.progress(7, 10);
    });
    await late!.progress(9, 10);
    expect(s.sent).toEqual([
      { progress: 1, total: 10, message: 'one' },
      { progress: 3 },
      { progress: 7, total: 10 },
    ]);

    const silent = scope({ progressToken: undefined });
    await runUnderDeadline(tool(), silent, clock, (ctx) => ctx.progress(1));
    expect(silent.sent).toEqual([]);
  });

  it('swallows a failed progress send', async () => {
    const clock = new FakeClock();
    const s = scope({ sendProgress: () => Promise.reject(new Error('stream closed')) });
    const settled = await runUnderDeadline(tool(), s, clock, async (ctx) => {
      await ctx.progress(1);
      return 'done';
    });
    expect(settled).toEqual({ ok: true, value: 'done' });
  });
});

describe('correlationIdFrom', () => {
  it('keeps a usable X-Correlation-ID and replaces anything else with a new id', () => {
    expect(correlationIdFrom({ 'x-correlation-id': 'req-7f3a:1' })).toBe('req-7f3a:1');
    expect(correlationIdFrom({ 'x-correlation-id': ['a-1', 'b-2'] })).toBe('a-1');
    const replaced = correlationIdFrom({ 'x-correlation-id': 'bad value\r\nx: y' });
    expect(replaced).toMatch(/^[0-9a-f-]{36}$/);
    expect(correlationIdFrom(undefined)).not.toBe(correlationIdFrom(undefined));
    expect(correlationIdFrom({ 'x-correlation-id': 'x'.repeat(129) })).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('tool definitions', () => {
  const base = { name: 'ok', description: 'd', inputSchema: {}, handler: () => 1 };

  it('checks the deadline: integer in [1, 30000], default 10000', () => {
    expect(resilientTool(base).deadlineMs).toBe(10_000);
    expect(resilientTool({ ...base, deadlineMs: 30_000 }).deadlineMs).toBe(30_000);
    expect(() => resilientTool({ ...base, deadlineMs: 30_001 })).toThrow(
      new RangeError('resilientTool: deadlineMs must be an integer in [1, 30000], got 30001'),
    );
    expect(() => resilientTool({ ...base, deadlineMs: 0 })).toThrow(RangeError);
    expect(() => resilientTool({ ...base, deadlineMs: 1.5 })).toThrow(RangeError);
  });

  it('checks the name, description, handler and schema', () => {
    expect(() => resilientTool({ ...base, name: 'has space' })).toThrow(
      new RangeError("resilientTool: name must be 1 to 128 of A-Z a-z 0-9 _ - ., got 'has space'"),
    );
    expect(() => resilientTool({ ...base, description: '' })).toThrow(RangeError);
    expect(() => resilientTool({ ...base, handler: undefined as never })).toThrow(RangeError);
    expect(() => resilientTool({ ...base, inputSchema: z.string() as never })).toThrow(
      /resilientTool: inputSchema must be an object schema/,
    );
    expect(() => resilientTool({ ...base, inputSchema: { a: 'string' } as never })).toThrow(
      new RangeError("resilientTool: inputSchema.a must be a zod schema, got 'string'"),
    );
  });

  it('reports every bad option of a definition at once in one OptionsError', () => {
    const sync = optionsErrorOf(() =>
      resilientTool({
        name: 'has space',
        title: '',
        description: '',
        inputSchema: { a: 'string', b: z.string(), c: 1 } as never,
        deadlineMs: 0,
        handler: undefined as never,
        toText: 'x' as never,
      }),
    );
    expect([sync.code, sync.owner, sync.problems.map((p) => p.option)]).toEqual([
      'invalid_options',
      'resilientTool',
      ['name', 'title', 'description', 'inputSchema.a', 'inputSchema.c', 'deadlineMs', 'handler', 'toText'],
    ]);
    expect(sync.message).toBe(
      "resilientTool: name must be 1 to 128 of A-Z a-z 0-9 _ - ., got 'has space'; title must be a non-empty " +
        "string, got ''; description must be a non-empty string, got ''; inputSchema.a must be a zod schema, " +
        "got 'string'; inputSchema.c must be a zod schema, got 1; deadlineMs must be an integer in [1, 30000], " +
        "got 0; handler must be a function, got undefined; toText must be a function, got 'x'",
    );
    const job = optionsErrorOf(() =>
      jobTool({
        name: 'ok',
        description: 'd',
        inputSchema: z.string() as never,
        jobType: '',
        enqueueOptions: 3 as never,
        toResult: {} as never,
      }),
    );
    expect([job.owner, job.problems.map((p) => p.option)]).toEqual([
      'jobTool',
      ['inputSchema', 'jobType', 'enqueueOptions', 'toResult'],
    ]);
    expect(job.message).toBe(
      'jobTool: inputSchema must be an object schema (JSON Schema type "object"), got an object; jobType ' +
        "must be a non-empty string, got ''; enqueueOptions must be EnqueueOptions or a function (args) => " +
        'EnqueueOptions, got 3; toResult must be a function, got an object',
    );
  });

  it('lists a shape and the same object schema alike', () => {
    const shape = resilientTool({ ...base, inputSchema: { a: z.number().describe('an a') } });
    const object = resilientTool({ ...base, inputSchema: z.object({ a: z.number().describe('an a') }) });
    expect(shape.listing).toEqual(object.listing);
    expect(shape.listing).toEqual({
      name: 'ok',
      description: 'd',
      inputSchema: {
        type: 'object',
        properties: { a: { type: 'number', description: 'an a' } },
        required: ['a'],
      },
    });
  });
});
