/**
 * `GET /v1/models` and `GET /v1/models/{model}` in OpenAI's shape: the models the caller may use (see
 * `visibleModels`). Who may call: whoever may call the completions (the same plugin, behind the same edge);
 * a key sees only what it may call, never another key's models.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BreakwaterError, newId, type Principal } from '../../core/index.js';
import { callerMetadata } from '../caller.js';
import type { OpenAiModel } from '../endpoints/catalog.js';
import type { Metadata } from '../types.js';

/** Longest model id echoed in a not-found message, characters (the rest is the client's to know). */
const MAX_ECHOED_ID = 256;

type ListModels = (principal: Principal | undefined, metadata: Metadata) => Promise<OpenAiModel[]>;

/**
 * Mounts both routes on `app` (the gateway's plugin, whose renderer answers their errors).
 * - `GET /v1/models` → 200 `{ object: 'list', data: OpenAiModel[] }`.
 * - `GET /v1/models/{model}` (the id's slashes sent as they are or as `%2F`) → 200 `OpenAiModel`; an id the
 *   caller may not use, or that does not exist, is the same 404 `not_found` (`error.code: 'model_not_found'`,
 *   `error.param: 'model'`), so a key cannot probe for models it is not allowed.
 * Either: 403 `metadata_not_allowed` as for the completions when an untrusted key sends
 * `x-breakwater-metadata`.
 */
export function modelsRoutes(app: FastifyInstance, list: ListModels): void {
  app.get('/v1/models', async (request, reply) => {
    const data = await list(...caller(request));
    void reply.header('x-request-id', newId());
    return { object: 'list', data };
  });
  app.get('/v1/models/*', async (request, reply) => {
    const id = modelId(request);
    void reply.header('x-request-id', newId());
    const found = (await list(...caller(request))).find((m) => m.id === id);
    if (found !== undefined) return found;
    const shown = id.length > MAX_ECHOED_ID ? `${id.slice(0, MAX_ECHOED_ID)}…` : id;
    throw new BreakwaterError('not_found', {
      message: `The model ${JSON.stringify(shown)} does not exist or you do not have access to it.`,
      details: { reason: 'model_not_found', field: 'model' },
    });
  });
}

function caller(request: FastifyRequest): [Principal | undefined, Metadata] {
  const principal = (request.principal as Principal | null | undefined) ?? undefined;
  return [principal, callerMetadata(principal, request.headers['x-breakwater-metadata'])];
}

/** The id after `/v1/models/`, `%2F` and other escapes decoded once. */
function modelId(request: FastifyRequest): string {
  const raw = (request.params as { '*'?: string })['*'] ?? '';
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}
