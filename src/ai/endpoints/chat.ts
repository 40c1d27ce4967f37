/** `POST /v1/chat/completions`: OpenAI's chat completion format (the body's checks live in ai/body.ts). */
import { estimateInput, providerBody, readChatBody } from '../body.js';
import { readUsage } from '../stream/sse.js';
import type { AiRequest } from '../types.js';
import type { AiEndpoint } from './endpoint.js';

/** The chat completions adapter: streamed and not; usage from `usage` (the final chunk of a stream). */
export const CHAT_ENDPOINT: AiEndpoint = Object.freeze({
  name: 'chat',
  path: '/v1/chat/completions',
  providerPath: '/chat/completions',
  read: readChatBody,
  providerBody,
  estimate: estimateInput,
  usage: readUsage,
});

/** The endpoint of `request`: its own, or chat completions for a request built without one. */
export function endpointOf(request: AiRequest): AiEndpoint {
  return request.endpoint ?? CHAT_ENDPOINT;
}
