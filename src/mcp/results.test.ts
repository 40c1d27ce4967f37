import { describe, expect, it } from 'vitest';
import { BreakwaterError } from '../core/index.js';
import type { JobError } from '../store/index.js';
import { errorResult, jobErrorInfo, successResult, toolErrorInfo } from './results.js';

describe('successResult', () => {
  it('gives the value as JSON text and as structuredContent, wrapping non-objects', () => {
    expect(successResult({ a: 1 })).toEqual({
      content: [{ type: 'text', text: '{"a":1}' }],
      structuredContent: { a: 1 },
    });
    expect(successResult([1, 2], 'two numbers')).toEqual({
      content: [{ type: 'text', text: 'two numbers' }],
      structuredContent: { result: [1, 2] },
    });
    expect(successResult(undefined)).toEqual({
      content: [{ type: 'text', text: 'null' }],
      structuredContent: { result: null },
    });
  });

  it('throws for a value with no JSON form (the caller turns it into internal_error)', () => {
    expect(() => successResult({ n: 1n })).toThrow(TypeError);
  });
});

describe('errorResult', () => {
  it('keeps a BreakwaterError: its message, retry hint, outcome and operation id', () => {
    const error = new BreakwaterError('outcome_unknown', { operationId: 'op_1', retryAfterMs: 1500.2 });
    expect(errorResult(error)).toEqual({
      content: [{ type: 'text', text: error.message }],
      structuredContent: {
        error: {
          code: 'outcome_unknown',
          category: 'outcome_unknown',
          message: error.message,
          retryable: false,
          retry_after_ms: 1501,
          outcome: 'unknown',
          operation_id: 'op_1',
        },
      },
      isError: true,
    });
  });

  it("an operation's reconcile hint and transport observation reach the model; malformed ones do not", () => {
    const reconcile = { method: 'GET', path: '/orders?idempotency_key=op_2' };
    const error = new BreakwaterError('outcome_unknown', {
      operationId: 'op_2',
      details: { reconcile, transport_observation: 'ECONNRESET' },
    });
    const info = toolErrorInfo(error);
    expect([info.operation_id, info.reconcile, info.transport_observation]).toEqual([
      'op_2',
      reconcile,
      'ECONNRESET',
    ]);
    const malformed = new BreakwaterError('outcome_unknown', {
      details: { reconcile: { method: 'GET' }, transport_observation: 7 },
    });
    expect(toolErrorInfo(malformed)).not.toHaveProperty('reconcile');
    expect(toolErrorInfo(malformed)).not.toHaveProperty('transport_observation');
  });

  it('classifies a foreign error without repeating its message', () => {
    const info = toolErrorInfo(new Error('connect to 10.0.0.3:5432 failed for user admin'));
    expect(info).toEqual({
      code: 'upstream_unavailable',
      category: 'upstream_unavailable',
      message: 'A service this request depends on is unavailable right now; try again shortly.',
      retryable: true,
      retry_after_ms: null,
      outcome: 'failed',
    });
    expect(toolErrorInfo(new DOMException('aborted', 'AbortError')).code).toBe('canceled');
    expect(toolErrorInfo(new RangeError('index 7 out of range')).message).toBe(
      'Something went wrong inside the gateway; this is a bug, not a temporary failure.',
    );
  });

  it('never shows a custom message of internal_error', () => {
    const info = toolErrorInfo(new BreakwaterError('internal_error', { message: 'table users is locked' }));
    expect(info.message).toBe(
      'Something went wrong inside the gateway; this is a bug, not a temporary failure.',
    );
  });

  it('makes a transient unknown outcome retryable for an idempotent tool only', () => {
    const cut = new BreakwaterError('deadline_exceeded', { outcome: 'unknown' });
    expect(toolErrorInfo(cut).retryable).toBe(false);
    expect(toolErrorInfo(cut, { idempotent: true }).retryable).toBe(true);
    expect(toolErrorInfo(new BreakwaterError('upstream_error'), { idempotent: true }).retryable).toBe(false);
  });

  it('ignores an empty or non-string dependency code', () => {
    expect(toolErrorInfo(new BreakwaterError('timeout', { details: { dependency_code: '' } })).code).toBe(
      'timeout',
    );
    expect(toolErrorInfo(new BreakwaterError('timeout', { details: { dependency_code: 5 } })).code).toBe(
      'timeout',
    );
  });
});

describe('jobErrorInfo', () => {
  const NOW = 1_700_000_000_000;

  it("uses a Breakwater error's own sentence and dependency code when the job stored them", () => {
    const stored: JobError = {
      code: 'circuit_open',
      kind: 'transient',
      message:
        'The gift recommendation service is temporarily unavailable after repeated failures; try again shortly.',
      userFacing: true,
      dependencyCode: 'gift_service_unavailable',
    };
    expect(jobErrorInfo(stored, 'failed', NOW)).toEqual({
      code: 'gift_service_unavailable',
      category: 'circuit_open',
      message:
        'The gift recommendation service is temporarily unavailable after repeated failures; try again shortly.',
      retryable: true,
      retry_after_ms: null,
      outcome: 'failed',
    });
    const unknown = { ...stored, code: 'outcome_unknown', outcome: 'unknown' as const };
    expect(jobErrorInfo(unknown, 'failed', NOW)).toMatchObject({ retryable: false, outcome: 'unknown' });
  });

  it('tells what is left of the stored wait at the time of reading, in retry_after_ms and the sentence', () => {
    const stored: JobError = {
      code: 'circuit_open',
      kind: 'transient',
      message: 'The gift recommendation service is temporarily unavailable; try again shortly.',
      userFacing: true,
      dependencyCode: 'gift_service_unavailable',
      retryAt: NOW + 29_841,
    };
    expect(jobErrorInfo(stored, 'failed', NOW)).toEqual({
      code: 'gift_service_unavailable',
      category: 'circuit_open',
      message: 'The gift recommendation service is temporarily unavailable; try again in about 30 seconds.',
      retryable: true,
      retry_after_ms: 29_841,
      outcome: 'failed',
    });
    expect(jobErrorInfo(stored, 'failed', NOW + 20_000.5)).toMatchObject({
      message: 'The gift recommendation service is temporarily unavailable; try again in about 10 seconds.',
      retry_after_ms: 9_841,
    });
    // Over: 0, and the stored sentence as it is.
    for (const at of [NOW + 29_841, NOW + 60_000]) {
      expect(jobErrorInfo(stored, 'failed', at)).toMatchObject({
        message: 'The gift recommendation service is temporarily unavailable; try again shortly.',
        retry_after_ms: 0,
      });
    }
  });

  it('uses the code sentence, never a stored message that was not written for users', () => {
    expect(
      jobErrorInfo(
        { code: 'internal_error', kind: 'fatal', message: 'relation "orders" does not exist' },
        'failed',
        NOW,
      ).message,
    ).toBe(jobErrorInfo(null, 'failed', NOW).message);
    expect(jobErrorInfo({ code: 'rate_limited', kind: 'transient', message: 'raw' }, 'failed', NOW)).toEqual({
      code: 'rate_limited',
      category: 'rate_limited',
      message: 'Too many requests were made in a short time; wait a moment before trying again.',
      retryable: true,
      retry_after_ms: null,
      outcome: 'failed',
    });
    // With a wait, the code's sentence says it (core sentenceFor).
    const limited: JobError = {
      code: 'rate_limited',
      kind: 'transient',
      message: 'raw',
      retryAt: NOW + 4_200,
    };
    expect(jobErrorInfo(limited, 'failed', NOW)).toMatchObject({
      message: 'Too many requests were made in a short time; try again in about 5 seconds.',
      retry_after_ms: 4_200,
    });
    expect(
      jobErrorInfo({ code: 'invalid_payload', kind: 'permanent', message: 'x' }, 'failed', NOW).retryable,
    ).toBe(false);
    expect(jobErrorInfo(null, 'failed', NOW).code).toBe('internal_error');
  });
});
