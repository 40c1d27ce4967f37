import { describe, expect, it } from 'vitest';
import { BreakwaterError } from '../../core/index.js';
import { parseIdempotencyKey } from './key.js';

function rejection(value: string | string[]): BreakwaterError {
  try {
    parseIdempotencyKey(value);
  } catch (error) {
    expect(error).toBeInstanceOf(BreakwaterError);
    return error as BreakwaterError;
  }
  throw new Error(`parseIdempotencyKey(${JSON.stringify(value)}) did not throw`);
}

describe('parseIdempotencyKey', () => {
  it('reads the sf-string form and the bare form as the same key', () => {
    expect(parseIdempotencyKey('"8e03978e-40d5-43e8-bc93-6894a57f9324"')).toBe(
      '8e03978e-40d5-43e8-bc93-6894a57f9324',
    );
    expect(parseIdempotencyKey('8e03978e-40d5-43e8-bc93-6894a57f9324')).toBe(
      '8e03978e-40d5-43e8-bc93-6894a57f9324',
    );
    expect(parseIdempotencyKey(['"abc"'])).toBe('abc');
  });

  it('decodes the sf-string escapes and keeps spaces inside quotes', () => {
    expect(parseIdempotencyKey('"a \\"quoted\\" \\\\ key"')).toBe('a "quoted" \\ key');
  });

  it('trims spaces and tabs around the value', () => {
    expect(parseIdempotencyKey(' \t"abc" ')).toBe('abc');
    expect(parseIdempotencyKey('  abc\t')).toBe('abc');
  });

  it('answers undefined when the header is absent', () => {
    expect(parseIdempotencyKey(undefined)).toBeUndefined();
    expect(parseIdempotencyKey([])).toBeUndefined();
  });

  it('accepts 255 characters, quoted or bare', () => {
    const key = 'k'.repeat(255);
    expect(parseIdempotencyKey(key)).toBe(key);
    expect(parseIdempotencyKey(`"${key}"`)).toBe(key);
  });

  it.each([
    ['empty', ''],
    ['blank', '   '],
    ['empty quoted', '""'],
    ['256 bare characters', 'k'.repeat(256)],
    ['256 quoted characters', `"${'k'.repeat(256)}"`],
  ])('rejects an %s key with 400 idempotency_key_invalid', (_name, value) => {
    const error = rejection(value);
    expect([error.code, error.status]).toEqual(['idempotency_key_invalid', 400]);
  });

  it('names the length of a key that is too long', () => {
    expect(rejection('k'.repeat(256)).message).toBe(
      'The Idempotency-Key is 256 characters long; at most 255 are allowed.',
    );
  });

  it.each([
    ['two header lines', ['"a"', '"b"']],
    ['two identical lines', ['"a"', '"a"']],
    ['a list of strings in one line', '"a", "b"'],
    ['a comma-joined bare list', 'a, b'],
    ['a comma-joined bare list without space', 'a,b'],
  ])('rejects %s (the header sent more than once)', (_name, value) => {
    const error = rejection(value);
    expect(error.code).toBe('idempotency_key_invalid');
    expect(error.status).toBe(400);
  });

  it.each([
    ['an unterminated string', '"abc'],
    ['a bad escape', '"a\\nb"'],
    ['text after the string', '"abc"x'],
    ['parameters', '"abc";v=1'],
    ['a tab inside quotes', '"a\tb"'],
    ['non-ASCII inside quotes', '"clé"'],
    ['a space in a bare key', 'a b'],
    ['a quote in a bare key', 'a"b'],
    ['a semicolon in a bare key', 'abc;v=1'],
    ['non-ASCII in a bare key', 'clé'],
  ])('rejects %s with 400 idempotency_key_invalid', (_name, value) => {
    expect(rejection(value).code).toBe('idempotency_key_invalid');
  });
});
