import { describe, expect, it } from 'vitest';
import {
  BreakwaterError,
  ERROR_CODES,
  isBreakwaterError,
  isErrorCode,
  isRequestTimeout,
  requestNotReceived,
  sentenceFor,
  type ErrorCode,
  type ErrorKind,
} from './errors.js';

/**
 * Every stable code with the kind and status docs/architecture.md#error-codes gives it (internal_error is the
 * non-Breakwater one; handler_failed a job handler's unrecognised error; idempotency_key_invalid the
 * malformed-header 400 of operations/).
 */
const EXPECTED: Record<ErrorCode, [ErrorKind, number]> = {
  timeout: ['transient', 504],
  deadline_exceeded: ['transient', 504],
  circuit_open: ['transient', 503],
  bulkhead_full: ['transient', 503],
  rate_limited: ['transient', 429],
  spend_limited: ['transient', 429],
  upstream_unavailable: ['transient', 503],
  upstream_error: ['permanent', 502],
  outcome_unknown: ['transient', 504],
  idempotency_key_missing: ['permanent', 400],
  idempotency_key_mismatch: ['permanent', 422],
  idempotency_in_progress: ['transient', 409],
  idempotency_key_invalid: ['permanent', 400],
  invalid_signature: ['permanent', 401],
  stale_timestamp: ['permanent', 401],
  payload_too_large: ['permanent', 413],
  invalid_payload: ['permanent', 400],
  overloaded: ['transient', 503],
  not_found: ['permanent', 404],
  canceled: ['permanent', 499],
  unauthorized: ['permanent', 401],
  handler_failed: ['transient', 500],
  input_timeout: ['permanent', 408],
  input_not_awaited: ['permanent', 409],
  input_unavailable: ['permanent', 412],
  internal_error: ['fatal', 500],
};

const CODES = Object.keys(ERROR_CODES) as ErrorCode[];

describe('ERROR_CODES', () => {
  it('has exactly the codes of docs/architecture.md, in order', () => {
    expect(CODES).toEqual(Object.keys(EXPECTED));
    expect(CODES).toHaveLength(26);
  });

  it.each(CODES)('%s has its kind, status, a title and a sentence', (code) => {
    const spec = ERROR_CODES[code];
    expect([spec.kind, spec.status]).toEqual(EXPECTED[code]);
    expect(spec.title).toMatch(/^[A-Z][A-Za-z -]+[a-z]$/);
    expect(spec.sentence).toMatch(/^[A-Z].{10,}\.$/);
  });

  it('codes are snake_case', () => {
    for (const code of CODES) expect(code).toMatch(/^[a-z]+(_[a-z]+)*$/);
  });
});

describe('BreakwaterError defaults', () => {
  it.each(CODES)('%s takes its defaults from the table', (code) => {
    const error = new BreakwaterError(code);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('BreakwaterError');
    expect(error.code).toBe(code);
    expect(error.kind).toBe(EXPECTED[code][0]);
    expect(error.status).toBe(EXPECTED[code][1]);
    expect(error.message).toBe(ERROR_CODES[code].sentence);
    expect(error.retryAfterMs).toBeUndefined();
    expect(error.outcome).toBe(code === 'outcome_unknown' ? 'unknown' : 'failed');
    expect(error.operationId).toBeUndefined();
    expect(error.source).toBeUndefined();
    expect(error.details).toBeUndefined();
    expect(error.cause).toBeUndefined();
  });

  it('outcome_unknown defaults to outcome unknown, but an explicit outcome wins', () => {
    expect(new BreakwaterError('outcome_unknown').outcome).toBe('unknown');
    expect(new BreakwaterError('outcome_unknown', { outcome: 'failed' }).outcome).toBe('failed');
    expect(new BreakwaterError('timeout', { outcome: 'unknown' }).outcome).toBe('unknown');
  });

  it('keeps every option it is given', () => {
    const cause = new Error('socket hang up');
    const error = new BreakwaterError('upstream_unavailable', {
      message: 'custom',
      kind: 'permanent',
      status: 502,
      retryAfterMs: 1500,
      outcome: 'unknown',
      operationId: 'op_1',
      source: 'gift-service',
      details: { attempt: 3 },
      cause,
    });
    expect({ ...error, name: error.name, message: error.message, cause: error.cause }).toEqual({
      name: 'BreakwaterError',
      code: 'upstream_unavailable',
      kind: 'permanent',
      status: 502,
      retryAfterMs: 1500,
      outcome: 'unknown',
      operationId: 'op_1',
      source: 'gift-service',
      details: { attempt: 3 },
      message: 'custom',
      cause,
    });
  });

  it('puts the retry hint into the default message', () => {
    expect(new BreakwaterError('circuit_open', { retryAfterMs: 20_000 }).message).toBe(
      'The service is temporarily unavailable after repeated failures; try again in about 20 seconds.',
    );
  });

  it('is retryable only when transient with a failed outcome', () => {
    expect(new BreakwaterError('circuit_open').retryable).toBe(true);
    expect(new BreakwaterError('not_found').retryable).toBe(false);
    expect(new BreakwaterError('internal_error').retryable).toBe(false);
    expect(new BreakwaterError('timeout', { kind: 'permanent' }).retryable).toBe(false);
    // The effect may have happened: a blind resend could repeat it.
    expect(new BreakwaterError('outcome_unknown').retryable).toBe(false);
    expect(new BreakwaterError('timeout', { outcome: 'unknown' }).retryable).toBe(false);
  });
});

describe('sentenceFor', () => {
  it('gives the bare sentence without a hint', () => {
    expect(sentenceFor('circuit_open')).toBe(
      'The service is temporarily unavailable after repeated failures; try again shortly.',
    );
  });

  it('replaces "shortly" with the rounded-up delay', () => {
    const base = 'The service is temporarily unavailable after repeated failures; try again';
    expect(sentenceFor('circuit_open', 20_000)).toBe(`${base} in about 20 seconds.`);
    expect(sentenceFor('circuit_open', 19_001)).toBe(`${base} in about 20 seconds.`);
    expect(sentenceFor('circuit_open', 1)).toBe(`${base} in about 1 second.`);
    expect(sentenceFor('circuit_open', 1000)).toBe(`${base} in about 1 second.`);
    expect(sentenceFor('circuit_open', 1001)).toBe(`${base} in about 2 seconds.`);
    expect(sentenceFor('circuit_open', 89_000)).toBe(`${base} in about 89 seconds.`);
    expect(sentenceFor('circuit_open', 89_001)).toBe(`${base} in about 2 minutes.`);
    expect(sentenceFor('circuit_open', 120_000)).toBe(`${base} in about 2 minutes.`);
    expect(sentenceFor('circuit_open', 3_600_000)).toBe(`${base} in about 60 minutes.`);
  });

  it('appends a clause to sentences that have no vague retry advice', () => {
    expect(sentenceFor('not_found', 5000)).toBe(
      'The requested item does not exist; try again in about 5 seconds.',
    );
  });

  it('replaces vague retry advice with the hint, and never adds one to outcome_unknown', () => {
    expect(sentenceFor('rate_limited', 60_000)).toBe(
      'Too many requests were made in a short time; try again in about 60 seconds.',
    );
    expect(sentenceFor('spend_limited', 30 * 60_000)).toBe(
      'The spending limit for this period has been reached; try again in about 30 minutes.',
    );
    expect(sentenceFor('outcome_unknown', 5000)).toBe(ERROR_CODES.outcome_unknown.sentence);
  });

  it('ignores hints that are zero, negative or not finite', () => {
    const base = ERROR_CODES.timeout.sentence;
    for (const ms of [0, -1, -20_000, Number.NaN, Infinity]) expect(sentenceFor('timeout', ms)).toBe(base);
  });
});

describe('isBreakwaterError / isErrorCode', () => {
  it('recognises instances and copies from a duplicated module', () => {
    expect(isBreakwaterError(new BreakwaterError('timeout'))).toBe(true);
    const foreign = Object.assign(new Error('x'), { name: 'BreakwaterError', code: 'timeout' });
    expect(isBreakwaterError(foreign)).toBe(true);
  });

  it('rejects look-alikes', () => {
    expect(isBreakwaterError(Object.assign(new Error('x'), { name: 'BreakwaterError', code: 'nope' }))).toBe(
      false,
    );
    expect(isBreakwaterError(Object.assign(new Error('x'), { code: 'timeout' }))).toBe(false);
    expect(isBreakwaterError({ name: 'BreakwaterError', code: 'timeout' })).toBe(false);
    expect(isBreakwaterError(new Error('timeout'))).toBe(false);
    expect(isBreakwaterError(null)).toBe(false);
    expect(isBreakwaterError(undefined)).toBe(false);
    expect(isBreakwaterError('timeout')).toBe(false);
  });

  it('isErrorCode accepts only own keys', () => {
    expect(isErrorCode('timeout')).toBe(true);
    expect(isErrorCode('internal_error')).toBe(true);
    expect(isErrorCode('TIMEOUT')).toBe(false);
    expect(isErrorCode('toString')).toBe(false);
    expect(isErrorCode('__proto__')).toBe(false);
    expect(isErrorCode(504)).toBe(false);
    expect(isErrorCode(undefined)).toBe(false);
  });
});

describe('BreakwaterError.withDetails', () => {
  it('keeps every field, merges the details (new keys win) and keeps the cause chain', () => {
    const root = new Error('socket hang up');
    const error = new BreakwaterError('upstream_unavailable', {
      message: 'gift is down',
      kind: 'transient',
      status: 502,
      retryAfterMs: 2_000,
      outcome: 'unknown',
      operationId: 'op_1',
      source: 'gift',
      details: { reason: 'reset', step: 'old' },
      cause: root,
    });
    const copy = error.withDetails({ step: 'primary', attempts: 2 });
    expect(copy).not.toBe(error);
    expect([copy.code, copy.message, copy.kind, copy.status, copy.retryAfterMs]).toEqual([
      'upstream_unavailable',
      'gift is down',
      'transient',
      502,
      2_000,
    ]);
    expect([copy.outcome, copy.operationId, copy.source, copy.cause]).toEqual([
      'unknown',
      'op_1',
      'gift',
      root,
    ]);
    expect(copy.details).toEqual({ reason: 'reset', step: 'primary', attempts: 2 });
    expect(error.details).toEqual({ reason: 'reset', step: 'old' });

    const bare = new BreakwaterError('timeout');
    expect(bare.withDetails({ route: 'r' }).cause).toBe(bare);
  });
});

describe('requestNotReceived', () => {
  it('is 408 timeout, retryable after 1 s, from the given source', () => {
    const error = requestNotReceived('server');
    expect([error.code, error.status, error.retryable, error.retryAfterMs, error.source]).toEqual([
      'timeout',
      408,
      true,
      1_000,
      'server',
    ]);
    expect(error.message).toBe('The request did not arrive in time, so it was not processed; send it again.');
  });
});

describe('isRequestTimeout', () => {
  it("recognizes Fastify's FST_ERR_HANDLER_TIMEOUT error, and nothing else", () => {
    expect(isRequestTimeout(Object.assign(new Error('late'), { code: 'FST_ERR_HANDLER_TIMEOUT' }))).toBe(
      true,
    );
    expect(isRequestTimeout(new BreakwaterError('timeout'))).toBe(false);
    expect(isRequestTimeout(Object.assign(new Error('x'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE' }))).toBe(
      false,
    );
    expect(isRequestTimeout(null)).toBe(false);
    expect(isRequestTimeout(undefined)).toBe(false);
  });
});
