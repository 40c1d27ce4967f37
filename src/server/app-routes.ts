/**
 * An app's own HTTP routes, mounted by the gateway next to its built-in ones (docs/http.md, "An app's own
 * routes"): the app gives a Fastify plugin, the gateway registers it under the app's prefix (or the root),
 * behind the same edge as every other route, with the inbound `Idempotency-Key` option ready.
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import type { Clock } from '../core/index.js';
import { principalOf, type RouteAccess } from '../http/index.js';
import { registerIdempotency } from '../operations/index.js';
import type { IdempotencyStore } from '../store/index.js';
import type { ServerRoutes } from './options.js';

/** A Fastify plugin declaring the app's routes (`async (app) => { app.post('/orders', …) }`). */
export type AppRoutesPlugin = (app: FastifyInstance) => void | Promise<void>;

/** An app's routes with where and to whom they are served (see {@link mountAppRoutes}). */
export interface AppRoutesOptions {
  /** The routes. Required. */
  plugin: AppRoutesPlugin;
  /**
   * Path prefix of every route, e.g. `/giftgenius` (default none: the routes sit at the root). One or more
   * segments, each starting with a letter, digit, `_`, `-` or `.`; no parameters, no trailing slash.
   */
  prefix?: string;
  /**
   * Who may call the routes that do not state `config.access` themselves (default {@link
   * APP_ROUTES_DEFAULT_ACCESS}, `['mcp']`: whoever may call the MCP tools). `'public'`: anyone; `'self'`:
   * the route checks its caller itself; scopes: a principal holding any one of them (`admin` holds all).
   */
  access?: RouteAccess;
}

/** What `AppParts.routes` takes: the plugin alone (at the root, default access), or with options. */
export type AppRoutes = AppRoutesPlugin | AppRoutesOptions;

/** The access of an app's routes by default: the MCP callers' (`/mcp` needs the `mcp` scope). */
export const APP_ROUTES_DEFAULT_ACCESS: RouteAccess = Object.freeze(['mcp']);

/**
 * First path segments the gateway serves itself (`/` is the dashboard): an app route there, or an app prefix
 * starting with one, is refused at startup.
 */
export const RESERVED_APP_PATHS: readonly string[] = Object.freeze([
  '/',
  '/mcp',
  '/jobs',
  '/healthz',
  '/readyz',
  '/metrics',
  '/webhooks',
  '/admin',
  '/dashboard',
  '/v1',
  '/.well-known',
]);

/** The `code` of the error a bad app route or prefix is refused with at startup. */
export const APP_ROUTES_ERROR_CODE = 'ERR_BREAKWATER_APP_ROUTES';

/** An app's routes ready to mount: the server's `routes` entry, and what it declared once mounted. */
export interface MountedAppRoutes {
  /** For `createServer({ routes: [...] })`. */
  routes: ServerRoutes;
  /**
   * `METHOD /path` of each route the plugin declared (`HEAD` of a `GET` left out), in declaration order;
   * filled while the server registers its plugins (after `ready()` or `listen()`).
   */
  readonly declared: readonly string[];
}

/** Options of {@link mountAppRoutes}. */
export interface MountAppRoutesOptions {
  /** Where the inbound idempotency records live (`store.idempotency`). Required. */
  idempotency: IdempotencyStore;
  /** The store's clock, for the `Retry-After` of a 409 (default the system clock). */
  clock?: Clock;
}

/**
 * Prepares an app's routes for the gateway's server. Every route the plugin declares:
 * - sits behind the edge like the built-in ones: a foreign `Host` or `Origin` gets 403 (`host_not_allowed`,
 *   `origin_not_allowed`) before any handler runs;
 * - is served to the principals its `config.access` names, else the {@link AppRoutesOptions.access} given,
 *   else {@link APP_ROUTES_DEFAULT_ACCESS}: the same callers as `/mcp`. A stranger gets problem+json with
 *   code `unauthorized`: 401 (`reason: credentials_missing`, `WWW-Authenticate: Bearer …`) when the gateway
 *   has credentials, 403 (`loopback_only`) in loopback mode from another machine, 401 (`invalid_token`) for
 *   a credential that does not verify; a principal without the scope gets 403 (`insufficient_scope`). With
 *   `--insecure-no-auth` anyone is served. The handler runs under the caller's principal
 *   (`request.principal`, `PrincipalContext`), so operations and jobs it starts belong to that caller;
 * - may set `config.idempotency` (docs/operations.md, "Inbound idempotency"): the option is registered with
 *   the store given here, and keys are scoped to the calling principal (`principal:<id>`): one principal's
 *   key never replays another's response. A route may still give a `scope` of its own.
 *
 * @throws RangeError with `code` {@link APP_ROUTES_ERROR_CODE}: here, for a plugin that is not a function,
 *   a malformed prefix, a prefix whose first segment the gateway serves ({@link RESERVED_APP_PATHS}) or an
 *   access that is not `'public'`, `'self'` or a list of scope names; when the server registers the plugin
 *   (so `ready()`/`listen()` rejects, and the gateway does not start), for a route at a reserved path or, at
 *   the root, one whose first segment is a parameter or wildcard (it would answer paths the gateway serves).
 *   Fastify's own error for a route declared twice.
 */
export function mountAppRoutes(given: AppRoutes, options: MountAppRoutesOptions): MountedAppRoutes {
  const spec: AppRoutesOptions = typeof given === 'function' ? { plugin: given } : given;
  if (typeof spec !== 'object' || spec === null || typeof spec.plugin !== 'function') {
    throw refused("the app's routes must be a Fastify plugin, or { plugin, prefix?, access? }");
  }
  const prefix = checkPrefix(spec.prefix);
  const access = checkAccess(spec.access ?? APP_ROUTES_DEFAULT_ACCESS);
  const declared: string[] = [];
  const routes: ServerRoutes = async (app) => {
    app.addHook('onRoute', (route: RouteOptions) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      if (prefix === '') checkRootRoute(route.url, methods);
      route.config = { ...route.config, access: route.config?.access ?? access };
      for (const method of methods) {
        // Fastify adds a HEAD route after each GET: not one the app declared.
        if (method === 'HEAD' && declared.includes(`GET ${route.url}`)) continue;
        declared.push(`${method} ${route.url}`);
      }
    });
    registerIdempotency(app, {
      store: options.idempotency,
      clock: options.clock,
      scope: (request) => `principal:${principalOf(request).id}`,
    });
    await app.register(
      async (scope) => {
        await spec.plugin(scope);
      },
      prefix === '' ? {} : { prefix },
    );
  };
  return { routes, declared };
}

const SEGMENT = /^[A-Za-z0-9_.~-][A-Za-z0-9_.~-]*$/;

function checkPrefix(prefix: unknown): string {
  if (prefix === undefined || prefix === '') return '';
  const segments = typeof prefix === 'string' ? prefix.split('/') : [];
  if (segments.length < 2 || segments[0] !== '' || segments.slice(1).some((s) => !SEGMENT.test(s))) {
    throw refused(
      `the app's routes prefix must be a path such as /my-app (segments of letters, digits, _ . ~ -; no parameters, no trailing slash), got ${JSON.stringify(prefix)}`,
    );
  }
  const reserved = reservedFor(prefix as string);
  if (reserved !== undefined) {
    throw refused(
      `the app's routes prefix ${prefix} is under ${reserved}, which the gateway serves itself; choose another prefix (reserved: ${RESERVED_APP_PATHS.join(' ')})`,
    );
  }
  return prefix as string;
}

function checkAccess(access: unknown): RouteAccess {
  const ok =
    access === 'public' ||
    access === 'self' ||
    (Array.isArray(access) &&
      access.length > 0 &&
      access.every((scope) => typeof scope === 'string' && scope.trim() !== ''));
  if (!ok) {
    throw refused(
      `the app's routes access must be 'public', 'self' or a non-empty list of scope names, got ${JSON.stringify(access)}`,
    );
  }
  return access as RouteAccess;
}

/** Refuses a root-level route that the gateway serves, or that would shadow what it serves. */
function checkRootRoute(url: string, methods: readonly string[]): void {
  const where = `${methods.join(',')} ${url}`;
  const reserved = reservedFor(url);
  if (reserved !== undefined) {
    throw refused(
      `the app's route ${where} is under ${reserved}, which the gateway serves itself; move it, or mount the app's routes under a prefix of their own ({ prefix: '/my-app', plugin }) (reserved: ${RESERVED_APP_PATHS.join(' ')})`,
    );
  }
  const first = url.split('/')[1] ?? '';
  if (first.startsWith(':') || first.startsWith('*')) {
    throw refused(
      `the app's route ${where} starts with a parameter or wildcard, so at the root it would answer paths the gateway serves; give it a fixed first segment, or mount the app's routes under a prefix`,
    );
  }
}

/** The reserved path `path` falls under (its first segment, case-insensitively), if any. */
function reservedFor(path: string): string | undefined {
  const first = `/${(path.split('/')[1] ?? '').toLowerCase()}`;
  return RESERVED_APP_PATHS.find((reserved) => reserved === first);
}

function refused(message: string): RangeError {
  const error = new RangeError(message) as RangeError & { code: string };
  error.code = APP_ROUTES_ERROR_CODE;
  return error;
}
