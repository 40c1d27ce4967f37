/**
 * Any other method or path under `/v1`: a problem the client can act on instead of an empty 404. An unknown
 * path is 404 `not_found` (`error.code: 'unknown_endpoint'`) naming the method and path and listing the
 * endpoints served; a served path with another method is 405 (`error.code: 'method_not_allowed'`) with
 * `Allow`. Who may call: whoever the host admits to `/v1/*` (a stranger gets the edge's 401 first).
 */
import type { FastifyInstance } from 'fastify';
import { BreakwaterError } from '../../core/index.js';
import type { AiEndpoint } from '../endpoints/endpoint.js';

/** Longest path echoed in the problem, characters (a client can send a path of any length). */
const MAX_ECHOED_PATH = 200;

/** The served paths and their methods (a pattern's `{model}` stands for one or more segments). */
function servedPaths(endpoints: readonly AiEndpoint[]): { path: string; methods: string[] }[] {
  return [
    ...endpoints.map((e) => ({ path: e.path, methods: ['POST'] })),
    { path: '/v1/models', methods: ['GET', 'HEAD'] },
    { path: '/v1/models/{model}', methods: ['GET', 'HEAD'] },
  ];
}

/** Mounts the catch-all under `/v1/` on `app` (the gateway's plugin, whose renderer answers the problem). */
export function unknownEndpointRoute(app: FastifyInstance, endpoints: readonly AiEndpoint[]): void {
  const served = servedPaths(endpoints);
  const list = served.map((s) => `${s.methods[0]} ${s.path}`);
  app.all('/v1/*', async (request) => {
    const url = request.url.split('?', 1)[0]!;
    const path = url.length > MAX_ECHOED_PATH ? `${url.slice(0, MAX_ECHOED_PATH)}…` : url;
    const method = request.method;
    const known = served.find((s) =>
      s.path.endsWith('{model}') ? url.startsWith('/v1/models/') && url.length > 11 : s.path === url,
    );
    if (known !== undefined) {
      const allow = known.methods.join(', ');
      throw new BreakwaterError('not_found', {
        status: 405,
        message: `${method} is not served at ${known.path}; use ${allow}.`,
        details: { reason: 'method_not_allowed', method, path, allow },
      });
    }
    throw new BreakwaterError('not_found', {
      message: `There is no endpoint ${method} ${path}. This gateway serves ${list.join(', ')}.`,
      details: { reason: 'unknown_endpoint', method, path, endpoints: list },
    });
  });
}
