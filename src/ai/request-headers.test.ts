import { describe, expect, it } from 'vitest';
import type { BreakwaterError } from '../core/index.js';
import { parseMetadata, readRequestHeaders } from './request-headers.js';

function refusal(fn: () => unknown): BreakwaterError {
  try {
    fn();
  } catch (error) {
    return error as BreakwaterError;
  }
  throw new Error('did not throw');
}

describe('x-breakwater-* request headers', () => {
  it('reads every header at its bounds', () => {
    expect(readRequestHeaders({})).toEqual({ overrides: {}, metadata: {} });
    const values = readRequestHeaders({
      'x-breakwater-request-timeout': '600000',
      'x-breakwater-max-attempts': '5',
      'x-breakwater-retry-delay': '5000',
      'x-breakwater-backoff': ' Linear ',
      'x-breakwater-metadata': '{"user":"u1","n":3,"vip":true,"team":null}',
    });
    expect(values.overrides).toEqual({
      timeoutMs: 600_000,
      maxAttempts: 5,
      retryDelayMs: 5000,
      backoff: 'linear',
    });
    expect({ ...values.metadata }).toEqual({ user: 'u1', n: 3, vip: true, team: null });
    expect(
      readRequestHeaders({ 'x-breakwater-retry-delay': '0', 'x-breakwater-max-attempts': '1' }).overrides,
    ).toEqual({
      retryDelayMs: 0,
      maxAttempts: 1,
    });
  });

  it('refuses a header sent twice', () => {
    const e = refusal(() => readRequestHeaders({ 'x-breakwater-max-attempts': ['1', '2'] }));
    expect(e.code).toBe('invalid_payload');
    expect(e.status).toBe(400);
    expect(e.details).toEqual({ reason: 'invalid_header', header: 'x-breakwater-max-attempts' });
    expect(e.message).toBe('The x-breakwater-max-attempts header must be sent once.');
  });

  it('names the rule in the message', () => {
    expect(refusal(() => readRequestHeaders({ 'x-breakwater-max-attempts': '9' })).message).toBe(
      'The x-breakwater-max-attempts header must be an integer from 1 to 5.',
    );
    expect(refusal(() => readRequestHeaders({ 'x-breakwater-retry-delay': '1e3' })).message).toBe(
      'The x-breakwater-retry-delay header must be an integer number of ms from 0 to 5000.',
    );
  });

  it('bounds metadata: keys, values, size', () => {
    const many = JSON.stringify(Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, i])));
    expect(refusal(() => parseMetadata(many)).message).toContain('at most 32 keys');
    expect(refusal(() => parseMetadata(JSON.stringify({ a: 'x'.repeat(257) }))).message).toContain(
      '"a" is not',
    );
    expect(refusal(() => parseMetadata(JSON.stringify({ '': 1 }))).message).toContain('keys must be');
    expect(refusal(() => parseMetadata(' '.repeat(4097))).message).toContain('at most 4096 bytes');
    expect(refusal(() => parseMetadata('{"n":1e999}')).message).toContain('"n" is not');
    // A `__proto__` key stays a plain key.
    const meta = parseMetadata('{"__proto__":"x"}');
    expect(Object.keys(meta)).toEqual(['__proto__']);
    expect(meta['__proto__']).toBe('x');
  });
});
