/**
 * What one endpoint of the gateway is (docs/ai-gateway.md#endpoints): the adapter a request's format needs,
 * and nothing else. The pipeline around it (the caller's allowed models, route flows, limits, reservation
 * and settlement, retries, first-byte timeouts, fallbacks, the log line) is the same for every endpoint;
 * an endpoint says how its body is read, what a step sends, what a cost estimate is made from and where
 * the provider's usage is.
 */
import type { EstimateInput } from '../pricing.js';
import type { AiRequest, Usage } from '../types.js';

/** The endpoints a model may serve (`models.<provider>/<model>.endpoints`). */
export const AI_ENDPOINT_NAMES = ['chat', 'embeddings'] as const;

/** `chat` (`POST /v1/chat/completions`) or `embeddings` (`POST /v1/embeddings`). */
export type AiEndpointName = (typeof AI_ENDPOINT_NAMES)[number];

/** What the gateway reads from a request body before it is answered. */
export interface EndpointBodyInfo {
  /** `<provider>/<model>` or `dynamic/<route>`. */
  readonly model: string;
  readonly stream: boolean;
  /** The client asked for the usage chunk of a stream (chat's `stream_options.include_usage`). */
  readonly includeUsage: boolean;
}

/** One endpoint's adapter. */
export interface AiEndpoint {
  readonly name: AiEndpointName;
  /** The gateway's path, `/v1/...` (always `POST`). */
  readonly path: string;
  /** The provider's path under its base URL (`/chat/completions`, `/embeddings`). */
  readonly providerPath: string;
  /**
   * Checks the fields the gateway relies on.
   * @throws BreakwaterError `invalid_payload` (400, `details.reason: 'invalid_body'`, `details.field`).
   */
  read(body: unknown): EndpointBodyInfo;
  /** The body a step sends: the client's, with the step's own `model`. */
  providerBody(request: AiRequest, model: string): string;
  /** What the spend reservation's estimate is made from (see `estimateMicroUsd`); cached per request. */
  estimate(request: AiRequest): EstimateInput;
  /** The token counts of the provider's `usage` member, or undefined when it has none usable. */
  usage(value: unknown): Usage | undefined;
}
