/**
 * The models a caller may use, as `GET /v1/models` lists them (docs/ai-gateway.md#endpoints): every
 * configured model and deployed route, or, for a key with `ai.allowedModels`, those of its allowed models
 * the gateway can serve (a direct model of a configured provider, a route that is deployed), in the key's
 * order. One key's list never shows what another key is allowed.
 */
import { DYNAMIC_PREFIX } from './prefix.js';
import { routeModel, type ModelCatalog, type OpenAiModel } from './catalog.js';
import type { Principal } from '../../core/index.js';
import type { Metadata } from '../types.js';

/** Where the list is made from. */
export interface ModelListSource {
  readonly catalog: ModelCatalog;
  /** Whether a provider of that name is configured. */
  hasProvider(name: string): boolean;
  /** The deployed routes' names (the gateway's `routeNames` option); without it no route is listed. */
  readonly routeNames?: () => Promise<readonly string[]>;
  /**
   * Whether `dynamic/<name>` is deployed (the gateway's `routes` resolver): asked for a key's allowed route
   * only when there is no `routeNames`.
   */
  hasRoute(name: string, metadata: Metadata): Promise<boolean>;
}

/**
 * The models `principal` may use, in OpenAI's shape.
 * @throws what `routeNames` or the resolver throw (the store unreachable).
 */
export async function visibleModels(
  source: ModelListSource,
  principal: Principal | undefined,
  metadata: Metadata,
): Promise<OpenAiModel[]> {
  const allowed = principal?.ai?.allowedModels;
  const names = source.routeNames === undefined ? undefined : await source.routeNames();
  if (allowed === undefined) {
    const routes = names === undefined ? [] : [...names].sort();
    return [...source.catalog.configured(), ...routes.map(routeModel)];
  }
  const deployed = names === undefined ? undefined : new Set(names);
  const models: OpenAiModel[] = [];
  const seen = new Set<string>();
  for (const id of allowed) {
    if (seen.has(id)) continue;
    seen.add(id);
    if (id.startsWith(DYNAMIC_PREFIX)) {
      const name = id.slice(DYNAMIC_PREFIX.length);
      const found = deployed === undefined ? await source.hasRoute(name, metadata) : deployed.has(name);
      if (found) models.push(routeModel(name));
      continue;
    }
    const slash = id.indexOf('/');
    if (slash > 0 && slash < id.length - 1 && source.hasProvider(id.slice(0, slash))) {
      models.push(source.catalog.describe(id));
    }
  }
  return models;
}
