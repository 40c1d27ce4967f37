/**
 * The chat completion body: the checks the gateway needs (everything else is the provider's to judge), the
 * body each step sends (its own `model`; for streams `stream_options.include_usage: true`, so the final
 * usage chunk tells the cost), and what a cost estimate is made from.
 */
import { BreakwaterError, checkJsonDepth } from '../core/index.js';
import type { EstimateInput } from './pricing.js';
import type { AiRequest } from './types.js';

/** What the gateway reads from a body. */
export interface ChatBodyInfo {
  /** `<provider>/<model>` or `dynamic/<route>`. */
  model: string;
  stream: boolean;
  includeUsage: boolean;
}

/**
 * Checks the fields the gateway relies on: the body nests at most `MAX_JSON_DEPTH` (64) levels (before
 * anything walks it: the cost estimate and the provider's body are serialized recursively), `model` a
 * non-empty string, `messages` a non-empty array, `stream` a boolean when present, `max_tokens` /
 * `max_completion_tokens` / `n` integers >= 1 when present, `stream_options` an object when present.
 * @throws BreakwaterError `invalid_payload` (400) naming the field; `details.reason: 'too_deep'` for the depth.
 */
export function readChatBody(body: unknown): ChatBodyInfo {
  const b = readModelBody(body);
  if (!Array.isArray(b.messages) || b.messages.length === 0) {
    throw invalidBody('messages must be a non-empty array.', 'messages');
  }
  if (b.stream !== undefined && b.stream !== null && typeof b.stream !== 'boolean') {
    throw invalidBody('stream must be a boolean.', 'stream');
  }
  // `n` multiplies the answer's cost (each choice is billed), so the spend estimate reads it too.
  for (const field of ['max_tokens', 'max_completion_tokens', 'n']) {
    const value = b[field];
    if (value !== undefined && value !== null && !(Number.isInteger(value) && (value as number) >= 1)) {
      throw invalidBody(`${field} must be an integer >= 1.`, field);
    }
  }
  const options = b.stream_options;
  if (options !== undefined && options !== null && (typeof options !== 'object' || Array.isArray(options))) {
    throw invalidBody('stream_options must be an object.', 'stream_options');
  }
  const stream = b.stream === true;
  const includeUsage = stream && (options as { include_usage?: unknown } | null)?.include_usage === true;
  return { model: b.model, stream, includeUsage };
}

/**
 * Splits `<provider>/<model>` at the first slash (model ids may hold more slashes: `openrouter/meta/llama`).
 * @returns undefined when there is no slash or either side is empty.
 */
export function splitModel(model: string): { provider: string; model: string } | undefined {
  const slash = model.indexOf('/');
  if (slash <= 0 || slash === model.length - 1) return undefined;
  return { provider: model.slice(0, slash), model: model.slice(slash + 1) };
}

/** The body a step sends: the client's, with the step's `model` and, for streams, usage asked for. */
export function providerBody(request: AiRequest, model: string): string {
  const body: Record<string, unknown> = { ...request.body, model };
  if (request.stream) {
    const options = request.body.stream_options;
    body.stream_options = {
      ...(typeof options === 'object' && options !== null ? options : {}),
      include_usage: true,
    };
  }
  return JSON.stringify(body);
}

const estimates = new WeakMap<AiRequest, EstimateInput>();

/**
 * What a cost estimate (`estimateMicroUsd`) needs from a request: its maximum output tokens, its answers
 * (`n`) and the UTF-8 bytes of its `messages` and `tools`. Computed once per request (cached), since every
 * step of a chain asks. Bounded: `messages` and `tools` are serialized only within `MAX_JSON_DEPTH` (the
 * route has checked the body already; this holds for a request built some other way too).
 * @throws BreakwaterError `invalid_payload` (400, `details.reason: 'too_deep'`) for a deeper body.
 */
export function estimateInput(request: AiRequest): EstimateInput {
  let input = estimates.get(request);
  if (input === undefined) {
    const b = request.body;
    checkJsonDepth(b);
    const max = b.max_completion_tokens ?? b.max_tokens;
    const messages = Array.isArray(b.messages) ? b.messages : [];
    const promptBytes =
      Buffer.byteLength(JSON.stringify(messages)) +
      (b.tools === undefined ? 0 : Buffer.byteLength(JSON.stringify(b.tools)));
    input = {
      maxOutputTokens: typeof max === 'number' ? max : undefined,
      promptBytes,
      messageCount: messages.length,
      answers: typeof b.n === 'number' ? b.n : 1,
    };
    estimates.set(request, input);
  }
  return input;
}

/**
 * What every endpoint's body starts with: a JSON object no deeper than core's `checkJsonDepth` allows, with
 * `model` a non-empty string.
 * @throws BreakwaterError `invalid_payload` (400, `details.reason: 'invalid_body'`, `details.field` `model`
 *   when it names one; `'too_deep'` for the depth).
 */
export function readModelBody(body: unknown): Record<string, unknown> & { model: string } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw invalidBody('The request body must be a JSON object.', undefined);
  }
  checkJsonDepth(body);
  const b = body as Record<string, unknown>;
  if (typeof b.model !== 'string' || b.model === '') {
    throw invalidBody(
      'model must be a non-empty string: "<provider>/<model>" or "dynamic/<route>".',
      'model',
    );
  }
  return b as Record<string, unknown> & { model: string };
}

/** The `invalid_payload` error of a bad body field (`field` undefined: the body as a whole). */
export function invalidBody(message: string, field: string | undefined): BreakwaterError {
  return new BreakwaterError('invalid_payload', {
    message,
    details: field === undefined ? { reason: 'invalid_body' } : { reason: 'invalid_body', field },
  });
}
