/**
 * The gateway's endpoints (docs/ai-gateway.md#endpoints): one adapter per request format over the shared
 * pipeline, the models each configured model serves, and the models a caller may see.
 */
import { CHAT_ENDPOINT } from './chat.js';
import { EMBEDDINGS_ENDPOINT } from './embeddings.js';
import type { AiEndpoint } from './endpoint.js';

export {
  AI_ENDPOINT_NAMES,
  type AiEndpoint,
  type AiEndpointName,
  type EndpointBodyInfo,
} from './endpoint.js';
export { CHAT_ENDPOINT, endpointOf } from './chat.js';
export { EMBEDDINGS_ENDPOINT, MAX_EMBEDDING_INPUTS } from './embeddings.js';
export {
  ModelCatalog,
  ROUTE_OWNER,
  routeModel,
  type ModelConfig,
  type ModelsInput,
  type OpenAiModel,
} from './catalog.js';
export { visibleModels, type ModelListSource } from './models.js';
export { DYNAMIC_PREFIX } from './prefix.js';

/** The `POST` endpoints the gateway serves, each through the shared pipeline. */
export const AI_ENDPOINTS: readonly AiEndpoint[] = Object.freeze([CHAT_ENDPOINT, EMBEDDINGS_ENDPOINT]);
