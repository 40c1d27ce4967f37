import { fastify, type FastifyInstance } from 'fastify';
import {
  drainRefusedBody,
  handleClientError,
  handleError,
  handleFrameworkError,
  handleNotFound,
  installEdge,
  installJsonBodyParser,
  refuseRepeatedQuery,
} from '../http/index.js';
import { eventsRoute } from './events-route.js';
import { healthRoutes } from './health.js';
import { jobRoutes } from './jobs-routes.js';
import { installLifecycle } from './lifecycle.js';
import { resolveServerOptions, type ServerOptions } from './options.js';
import { installRequestTimeout } from './request-timeout.js';

/**
 * Builds Breakwater's HTTP app (docs/architecture.md#layers-and-folders), not listening yet: call
 * `app.listen({ port, host })` (or `app.inject()` in tests), and {@link closeGracefully} to stop.
 *
 * Routes: `GET /healthz`, `GET /readyz`, `GET /jobs`, `GET /jobs/:id`, `POST /jobs/:id/cancel`,
 * `POST /jobs/:id/input`,
 * `GET /jobs/:id/events` (SSE), then every `options.routes` entry (the MCP endpoint, …). Every error any
 * route throws, and Fastify's own (unknown route, schema validation, body too large, unsupported media type,
 * malformed URL or HTTP), is answered by the edge's one error handler: `application/problem+json` (RFC 9457)
 * with `Retry-After` when the error has a retry hint (see `toHttpError`), in the body shape of the renderer a
 * mounted capability chose for its routes (`installErrorRenderer`: the AI gateway's OpenAI-shaped `error`). A route that has not answered within `requestTimeoutMs` gets a
 * 504 (`timeout`, or `outcome_unknown` for a non-safe method) and its `requestSignal(request)` aborts; routes that
 * stream hijack their reply and are exempt.
 *
 * @throws RangeError naming the option when an option is invalid.
 */
export function createServer(options: ServerOptions): FastifyInstance {
  const o = resolveServerOptions(options);
  const app = fastify({
    logger: o.logger,
    bodyLimit: o.bodyLimitBytes,
    // Ids travel in paths (webhook event ids, idempotency keys: up to 255 characters, three times that
    // percent-encoded); Fastify's default of 100 answered 414 for ids the API accepts elsewhere.
    routerOptions: { maxParamLength: 1_024 },
    // Node's limit on receiving the request itself (slow-loris); Fastify turns Node's default off.
    requestTimeout: o.requestTimeoutMs,
    // Our onRequest hook answers requests that arrive while closing, as problem+json.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    frameworkErrors: handleFrameworkError,
    clientErrorHandler: handleClientError,
    // Only the named proxies' X-Forwarded-* are believed (request.ip, request.protocol); see http/proxy.ts.
    ...(o.trustedProxies.length === 0 ? {} : { trustProxy: o.trustedProxies }),
  }) as unknown as FastifyInstance;

  // Application-level: the whole route lifecycle, keep-alive safe (unlike socket timeouts); see
  // request-timeout.ts for why not Fastify's handlerTimeout.
  installRequestTimeout(app, o.requestTimeoutMs, o.clock);
  app.setErrorHandler(handleError);
  // JSON bodies nested past MAX_JSON_DEPTH, and a query parameter repeated where one value is expected, get a
  // 400 before any route reads them.
  installJsonBodyParser(app);
  app.addHook('preValidation', refuseRepeatedQuery);
  app.setNotFoundHandler(handleNotFound);
  app.addHook('onSend', drainRefusedBody);
  installEdge(app, {
    authenticator: o.authenticator,
    publicUrl: o.publicUrl,
    allowedHosts: o.allowedHosts,
    allowedOrigins: o.allowedOrigins,
  });
  const state = installLifecycle(app, { clock: o.clock, shutdownGraceMs: o.shutdownGraceMs });

  healthRoutes(app, {
    ready: o.ready,
    readyTimeoutMs: o.readyTimeoutMs,
    breakers: o.breakers,
    clock: o.clock,
  });
  jobRoutes(app, { jobs: o.jobs, store: o.store, publicUrl: o.publicUrl, clock: o.clock });
  eventsRoute(app, {
    jobs: o.jobs,
    state,
    keepAliveMs: o.keepAliveMs,
    maxStreamBufferBytes: o.maxStreamBufferBytes,
    maxStreamsPerPrincipal: o.maxStreamsPerPrincipal,
    maxStreams: o.maxStreams,
  });
  for (const routes of o.routes) {
    void app.register(async (child) => {
      await routes(child);
    });
  }
  return app;
}
