import { describe, expect, it } from 'vitest';
import { BreakwaterError } from '../../core/index.js';
import type { AiRequest } from '../types.js';
import { EMBEDDINGS_ENDPOINT, MAX_EMBEDDING_INPUTS } from './embeddings.js';

/** The `details.field` of the refusal of `body`, or 'ok'. */
function refusal(body: unknown): string {
  try {
    EMBEDDINGS_ENDPOINT.read(body);
    return 'ok';
  } catch (error) {
    expect(error).toBeInstanceOf(BreakwaterError);
    const e = error as BreakwaterError;
    expect([e.status, e.details?.reason]).toEqual([400, 'invalid_body']);
    return String(e.details?.field);
  }
}

const request = (body: Record<string, unknown>): AiRequest =>
  ({ body, stream: false, includeUsage: false }) as unknown as AiRequest;

describe('the embeddings body', () => {
  it('accepts a string, strings, token ids and arrays of token ids; never streamed', () => {
    for (const input of ['kites', ['a', 'b'], [1, 2, 3], [[1], [2, 3]]]) {
      expect(EMBEDDINGS_ENDPOINT.read({ model: 'p/m', input, stream: true })).toEqual({
        model: 'p/m',
        stream: false,
        includeUsage: false,
      });
    }
    expect(refusal({ model: 'p/m', input: 'x', dimensions: 3, encoding_format: 'base64' })).toBe('ok');
  });

  it('refuses what the gateway cannot estimate or the provider cannot take, naming the field', () => {
    expect(refusal([])).toBe('undefined');
    expect(refusal({ input: 'x' })).toBe('model');
    for (const input of [undefined, '', [], [''], ['a', 1], [1.5], [-1], [[]], [[1], 'a'], {}]) {
      expect(refusal({ model: 'p/m', input })).toBe('input');
    }
    expect(refusal({ model: 'p/m', input: Array(MAX_EMBEDDING_INPUTS + 1).fill('a') })).toBe('input');
    expect(refusal({ model: 'p/m', input: 'x', dimensions: 0 })).toBe('dimensions');
    expect(refusal({ model: 'p/m', input: 'x', encoding_format: 'int8' })).toBe('encoding_format');
  });

  it('estimates one token per UTF-8 byte of each string and one per token id, no output', () => {
    expect(EMBEDDINGS_ENDPOINT.estimate(request({ input: ['héllo', 'ab'] }))).toEqual({
      maxOutputTokens: 0,
      promptBytes: 8,
      messageCount: 0,
      answers: 1,
    });
    expect(EMBEDDINGS_ENDPOINT.estimate(request({ input: [[1, 2], [3]] })).promptBytes).toBe(3);
    expect(EMBEDDINGS_ENDPOINT.estimate(request({ input: [7, 8, 9, 10] })).promptBytes).toBe(4);
  });

  it('reads prompt_tokens as the usage, with no completion or cached tokens', () => {
    expect(EMBEDDINGS_ENDPOINT.usage({ prompt_tokens: 5, total_tokens: 5 })).toEqual({
      promptTokens: 5,
      completionTokens: 0,
      cachedTokens: 0,
    });
    expect(EMBEDDINGS_ENDPOINT.usage({ total_tokens: 5 })).toBeUndefined();
    expect(EMBEDDINGS_ENDPOINT.usage(null)).toBeUndefined();
  });
});
