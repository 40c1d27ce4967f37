/**
 * Who may call each route (docs/security.md, "Routes"). A route states it in its Fastify config
 * (`{ config: { access: 'public' } }`, `{ config: { access: ['jobs', 'mcp'] } }`); routes that do not are
 * looked up in {@link DEFAULT_ACCESS} by their path pattern; anything else needs `admin`, so a route added
 * without a thought is closed, not open.
 */
import type { FastifyRequest } from 'fastify';

/**
 * - `public`: anyone (probes, signed webhook deliveries, the OAuth metadata, the login form);
 * - `self`: the route checks its caller itself (the admin routes: admin token, dashboard session);
 * - scopes: a principal holding any one of them (`admin` holds all).
 */
export type RouteAccess = 'public' | 'self' | readonly string[];

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call this route (see src/http/access.ts). */
    access?: RouteAccess;
    /**
     * Serve pages of any origin (the `Origin` check is skipped; `Host` still is): only for public documents
     * a browser client must read before it has a credential, such as the OAuth resource metadata.
     */
    anyOrigin?: boolean;
  }
}

/** The built-in routes' access, by path pattern: an exact pattern, or a prefix ending in `/` or `*`. */
export const DEFAULT_ACCESS: ReadonlyArray<readonly [string, RouteAccess]> = [
  ['/healthz', 'public'],
  ['/readyz', 'public'],
  ['/.well-known/*', 'public'],
  ['/webhooks/:source', 'public'],
  ['/', 'self'],
  ['/dashboard/*', 'self'],
  ['/admin/*', 'self'],
  ['/mcp', ['mcp']],
  ['/v1/*', ['ai']],
  // Job tools hand their callers these URLs, so an `mcp` credential may follow them (ownership still holds).
  ['/jobs', ['jobs', 'mcp']],
  ['/jobs/*', ['jobs', 'mcp']],
  ['/metrics', ['metrics']],
];

const ADMIN_ONLY: RouteAccess = ['admin'];

/** The access of the route a request matched; `public` for no route (it is answered 404). */
export function accessOf(request: FastifyRequest): RouteAccess {
  const options = request.routeOptions;
  const declared = options.config?.access;
  if (declared !== undefined) return declared;
  const url = options.url;
  if (url === undefined) return 'public';
  for (const [pattern, access] of DEFAULT_ACCESS) {
    if (pattern.endsWith('*') ? url.startsWith(pattern.slice(0, -1)) : url === pattern) return access;
  }
  return ADMIN_ONLY;
}

/** Route patterns served to any origin by default: discovery documents (RFC 9728, RFC 8615). */
const ANY_ORIGIN_PREFIX = '/.well-known/';

/** True when the route a request matched is served to pages of any origin (see `anyOrigin`). */
export function anyOrigin(request: FastifyRequest): boolean {
  const options = request.routeOptions;
  return options.config?.anyOrigin ?? options.url?.startsWith(ANY_ORIGIN_PREFIX) === true;
}
