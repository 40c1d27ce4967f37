/**
 * The gateway's models (`models` and `prices` of `createAiGateway`): which endpoints each serves, and how
 * `GET /v1/models` shows it. A model that no `models` entry declares serves chat completions only, so a
 * configuration written before embeddings existed keeps its meaning.
 */
import type { AiEndpointName } from './endpoint.js';

/** A model as configured under `models.<provider>/<model>`. */
export interface ModelConfig {
  /** The endpoints it serves, at least one (default `['chat']`). */
  endpoints?: readonly AiEndpointName[];
  /** Its `created` in `GET /v1/models`, Unix seconds (default 0: unknown). */
  created?: number;
  /** Its `owned_by` in `GET /v1/models` (default the provider's name). */
  ownedBy?: string;
}

/** Models by `<provider>/<model>`. */
export type ModelsInput = Readonly<Record<string, ModelConfig>>;

/** One model in OpenAI's shape (`GET /v1/models/{id}`, an entry of `GET /v1/models`). */
export interface OpenAiModel {
  id: string;
  object: 'model';
  /** Unix seconds. */
  created: number;
  owned_by: string;
}

/** What `owned_by` shows for a `dynamic/<route>`: the gateway's own route, not one provider's model. */
export const ROUTE_OWNER = 'breakwater';

const CHAT_ONLY: readonly AiEndpointName[] = Object.freeze(['chat']);

/** The configured models. */
export class ModelCatalog {
  private readonly models = new Map<string, ModelConfig>();

  /**
   * @param models already validated (`<provider>/<model>` keys of configured providers).
   * @param priced the keys of `prices`: configured models too (listed after `models`, chat only).
   */
  constructor(models: ModelsInput = {}, priced: readonly string[] = []) {
    for (const [id, config] of Object.entries(models)) this.models.set(id, config);
    for (const id of priced) if (!this.models.has(id)) this.models.set(id, {});
  }

  /** The endpoints `<provider>/<model>` serves: its declared ones, else chat only. */
  endpointsOf(provider: string, model: string): readonly AiEndpointName[] {
    return this.models.get(`${provider}/${model}`)?.endpoints ?? CHAT_ONLY;
  }

  /** Whether `<provider>/<model>` serves `endpoint`. */
  serves(provider: string, model: string, endpoint: AiEndpointName): boolean {
    return this.endpointsOf(provider, model).includes(endpoint);
  }

  /** Every configured model, `models` first then `prices`, each in its configured order. */
  configured(): OpenAiModel[] {
    return [...this.models.keys()].map((id) => this.describe(id));
  }

  /** `<provider>/<model>` in OpenAI's shape (configured or not). */
  describe(id: string): OpenAiModel {
    const config = this.models.get(id);
    return {
      id,
      object: 'model',
      created: config?.created ?? 0,
      owned_by: config?.ownedBy ?? id.slice(0, id.indexOf('/')),
    };
  }
}

/** `dynamic/<name>` in OpenAI's shape. */
export function routeModel(name: string): OpenAiModel {
  return { id: `dynamic/${name}`, object: 'model', created: 0, owned_by: ROUTE_OWNER };
}
