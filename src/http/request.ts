/**
 * What the HTTP edge adds to every Fastify request: `request.principal`, the caller it admitted (see
 * core's `Principal`). Set by the edge's `onRequest` hook before any handler runs; a route's handler and
 * everything it awaits also run under `PrincipalContext` with the same principal.
 */
import type { Principal } from '../core/index.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller the edge admitted (see core's `Principal`). */
    principal: Principal;
  }
}

export type { Principal };
