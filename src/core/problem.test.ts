import { describe, expect, it } from 'vitest';
import { BreakwaterError } from './errors.js';
import { PROBLEM_CONTENT_TYPE, retryAfterHeader, toProblem } from './problem.js';

describe('toProblem', () => {
  it('serializes a BreakwaterError as RFC 9457 problem details', () => {
    const error = new BreakwaterError('circuit_open', {
      retryAfterMs: 20_000,
      operationId: 'op_123',
      source: 'commerce',
      details: { dependency: 'commerce', attempts: 3 },
    });
    expect(toProblem(error, '/tools/checkout')).toEqual({
      type: 'urn:breakwater:error:circuit_open',
      title: 'Circuit open',
      status: 503,
      detail:
        'The service is temporarily unavailable after repeated failures; try again in about 20 seconds.',
      code: 'circuit_open',
      retryable: true,
      retry_after_ms: 20_000,
      outcome: 'failed',
      instance: '/tools/checkout',
      operation_id: 'op_123',
      dependency: 'commerce',
      attempts: 3,
    });
  });

  it('has exactly the standard members when nothing optional is set', () => {
    const problem = toProblem(new BreakwaterError('not_found'));
    expect(problem).toStrictEqual({
      type: 'urn:breakwater:error:not_found',
      title: 'Not found',
      status: 404,
      detail: 'The requested item does not exist.',
      code: 'not_found',
      retryable: false,
      retry_after_ms: null,
      outcome: 'failed',
    });
    expect(Object.keys(problem)).toEqual([
      'type',
      'title',
      'status',
      'detail',
      'code',
      'retryable',
      'retry_after_ms',
      'outcome',
    ]);
  });

  it('marks an unknown outcome as not retryable (reconcile before resending)', () => {
    expect(toProblem(new BreakwaterError('outcome_unknown', { operationId: 'op_9' }))).toEqual({
      type: 'urn:breakwater:error:outcome_unknown',
      title: 'Outcome unknown',
      status: 504,
      detail:
        'The request was sent but no answer came back, so it may or may not have taken effect; check its status before trying again.',
      code: 'outcome_unknown',
      retryable: false,
      retry_after_ms: null,
      outcome: 'unknown',
      operation_id: 'op_9',
    });
  });

  it('turns a plain Error into internal_error 500 without leaking its message or stack', () => {
    const error = new Error('password=hunter2 at db.internal:5432');
    const problem = toProblem(error, '/v1/chat/completions');
    expect(problem).toStrictEqual({
      type: 'urn:breakwater:error:internal_error',
      title: 'Internal error',
      status: 500,
      detail: 'Something went wrong inside the gateway; this is a bug, not a temporary failure.',
      code: 'internal_error',
      retryable: false,
      retry_after_ms: null,
      outcome: 'failed',
      instance: '/v1/chat/completions',
    });
    const text = JSON.stringify(problem);
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('db.internal');
    expect(text).not.toContain('problem.test');
  });

  it('turns thrown non-errors into internal_error too', () => {
    for (const thrown of ['boom', undefined, null, 42, { status: 400 }]) {
      expect(toProblem(thrown).code).toBe('internal_error');
      expect(toProblem(thrown).status).toBe(500);
    }
  });

  it('never lets extension members overwrite or add standard members', () => {
    const details = {
      type: 'about:blank',
      title: 'Hacked',
      status: 200,
      detail: 'ok',
      instance: '/elsewhere',
      code: 'not_found',
      retryable: false,
      retry_after_ms: 0,
      outcome: 'unknown',
      operation_id: 'op_forged',
      extra: 'kept',
    };
    const problem = toProblem(new BreakwaterError('bulkhead_full', { retryAfterMs: 250, details }));
    expect(problem).toStrictEqual({
      type: 'urn:breakwater:error:bulkhead_full',
      title: 'Bulkhead full',
      status: 503,
      detail: 'The service is busy with other requests right now; try again in about 1 second.',
      code: 'bulkhead_full',
      retryable: true,
      retry_after_ms: 250,
      outcome: 'failed',
      extra: 'kept',
    });
  });

  it('keeps a "__proto__" key from parsed JSON as a plain member', () => {
    const details = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as Record<string, unknown>;
    const problem = toProblem(new BreakwaterError('invalid_payload', { details }));
    expect(Object.getPrototypeOf(problem)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(problem, '__proto__')?.value).toEqual({ polluted: true });
    expect((problem as { polluted?: unknown }).polluted).toBeUndefined();
    expect(JSON.parse(JSON.stringify(problem))).toEqual(
      JSON.parse(
        '{"type":"urn:breakwater:error:invalid_payload","title":"Invalid payload","status":400,' +
          '"detail":"The request body is not valid.","code":"invalid_payload","retryable":false,' +
          '"retry_after_ms":null,"outcome":"failed","__proto__":{"polluted":true},"a":1}',
      ),
    );
  });

  it('uses an explicit status and keeps a foreign-copy BreakwaterError', () => {
    expect(toProblem(new BreakwaterError('upstream_error', { status: 424 })).status).toBe(424);
    const foreign = Object.assign(new Error('copy'), {
      name: 'BreakwaterError',
      code: 'overloaded',
      kind: 'transient',
      status: 503,
      retryAfterMs: 1000,
      outcome: 'failed',
    });
    expect(toProblem(foreign)).toStrictEqual({
      type: 'urn:breakwater:error:overloaded',
      title: 'Overloaded',
      status: 503,
      detail: 'copy',
      code: 'overloaded',
      retryable: true,
      retry_after_ms: 1000,
      outcome: 'failed',
    });
  });
});

describe('retryAfterHeader', () => {
  const header = (retryAfterMs?: number): string | undefined =>
    retryAfterHeader(new BreakwaterError('rate_limited', { retryAfterMs }));

  it('is whole seconds rounded up', () => {
    expect(header(0)).toBe('0');
    expect(header(1)).toBe('1');
    expect(header(999)).toBe('1');
    expect(header(1000)).toBe('1');
    expect(header(1001)).toBe('2');
    expect(header(20_000)).toBe('20');
    expect(header(20_000.5)).toBe('21');
  });

  it('is never negative and absent without a finite hint', () => {
    expect(header(-5000)).toBe('0');
    expect(header(undefined)).toBeUndefined();
    expect(header(Number.NaN)).toBeUndefined();
    expect(header(Infinity)).toBeUndefined();
  });

  it('names the RFC 9457 media type', () => {
    expect(PROBLEM_CONTENT_TYPE).toBe('application/problem+json');
  });
});
