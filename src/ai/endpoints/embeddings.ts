/**
 * `POST /v1/embeddings`: OpenAI's embeddings format. Never streamed; priced per input token (the model's
 * `inputPerMTok`), usage `{ prompt_tokens, total_tokens }`.
 */
import { invalidBody, readModelBody } from '../body.js';
import type { EstimateInput } from '../pricing.js';
import type { AiRequest, Usage } from '../types.js';
import type { AiEndpoint, EndpointBodyInfo } from './endpoint.js';

/** Inputs of one request at most (OpenAI's own bound for `input` as an array). */
export const MAX_EMBEDDING_INPUTS = 2_048;

/**
 * Checks the fields the gateway relies on: the body nests at most `MAX_JSON_DEPTH` levels, `model` a
 * non-empty string, `input` a non-empty string, a non-empty array of up to {@link MAX_EMBEDDING_INPUTS}
 * non-empty strings, a non-empty array of token ids (integers >= 0), or a non-empty array of such arrays;
 * `dimensions` an integer >= 1 and `encoding_format` `float` or `base64` when present.
 * @throws BreakwaterError `invalid_payload` (400, `details.reason: 'invalid_body'`, `details.field`).
 */
function readEmbeddingsBody(body: unknown): EndpointBodyInfo {
  const b = readModelBody(body);
  if (!validInput(b.input)) {
    throw invalidBody(
      `input must be a non-empty string, or a non-empty array (at most ${MAX_EMBEDDING_INPUTS}) of non-empty strings, of token ids, or of arrays of token ids.`,
      'input',
    );
  }
  if (
    b.dimensions !== undefined &&
    b.dimensions !== null &&
    !(Number.isInteger(b.dimensions) && (b.dimensions as number) >= 1)
  ) {
    throw invalidBody('dimensions must be an integer >= 1.', 'dimensions');
  }
  const format = b.encoding_format;
  if (format !== undefined && format !== null && format !== 'float' && format !== 'base64') {
    throw invalidBody('encoding_format must be "float" or "base64".', 'encoding_format');
  }
  return { model: b.model, stream: false, includeUsage: false };
}

const isTokenId = (v: unknown): boolean => Number.isInteger(v) && (v as number) >= 0;
const isTokens = (v: unknown): boolean => Array.isArray(v) && v.length > 0 && v.every(isTokenId);

function validInput(input: unknown): boolean {
  if (typeof input === 'string') return input !== '';
  if (!Array.isArray(input) || input.length === 0 || input.length > MAX_EMBEDDING_INPUTS) return false;
  if (typeof input[0] === 'string') return input.every((s) => typeof s === 'string' && s !== '');
  if (typeof input[0] === 'number') return input.every(isTokenId);
  return input.every(isTokens);
}

const estimates = new WeakMap<AiRequest, EstimateInput>();

/**
 * The input's token count bound: a string's UTF-8 bytes (a BPE token is never less than one byte of text),
 * a token id array's length; no output tokens.
 */
function estimateEmbeddings(request: AiRequest): EstimateInput {
  let input = estimates.get(request);
  if (input === undefined) {
    const raw = request.body.input;
    const items: unknown[] = Array.isArray(raw) && typeof raw[0] !== 'number' ? raw : [raw];
    let tokens = 0;
    for (const item of items) {
      if (typeof item === 'string') tokens += Buffer.byteLength(item);
      else if (Array.isArray(item)) tokens += item.length;
    }
    input = { maxOutputTokens: 0, promptBytes: tokens, messageCount: 0, answers: 1 };
    estimates.set(request, input);
  }
  return input;
}

/** `usage.prompt_tokens` (embeddings have no completion tokens and no cache). */
function readEmbeddingsUsage(value: unknown): Usage | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const prompt = (value as { prompt_tokens?: unknown }).prompt_tokens;
  if (typeof prompt !== 'number' || !Number.isSafeInteger(prompt) || prompt < 0) return undefined;
  return { promptTokens: prompt, completionTokens: 0, cachedTokens: 0 };
}

/** The embeddings adapter. */
export const EMBEDDINGS_ENDPOINT: AiEndpoint = Object.freeze({
  name: 'embeddings',
  path: '/v1/embeddings',
  providerPath: '/embeddings',
  read: readEmbeddingsBody,
  providerBody: (request: AiRequest, model: string) => JSON.stringify({ ...request.body, model }),
  estimate: estimateEmbeddings,
  usage: readEmbeddingsUsage,
});
