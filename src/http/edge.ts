/**
 * The edge's hooks: before any route runs, a request's `Host` and `Origin` are checked (403), its caller is
 * established (401/403), the route's access is enforced (403 `insufficient_scope`), and `request.principal`
 * is set; the handler, and everything it awaits, runs under `PrincipalContext` with that principal.
 */
import type { FastifyInstance, FastifyRequest, onRequestHookHandler, preHandlerHookHandler } from 'fastify';
import {
  BreakwaterError,
  PRINCIPALS,
  PrincipalContext,
  hasScope,
  isBreakwaterError,
  type Principal,
} from '../core/index.js';
import { accessOf, anyOrigin } from './access.js';
import { createAuthenticator, type Authenticator } from './auth.js';
import { checkHostAndOrigin, hostRules, type HostRefusal, type HostRules } from './host.js';
import './request.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The edge's credential check, for routes that refuse a caller themselves after reading the request (an
     * MCP tool that needs a scope): `challenge` writes their `WWW-Authenticate`. Absent without the edge.
     */
    authenticator?: Authenticator;
  }
}

/** Options of {@link installEdge}. */
export interface EdgeOptions {
  /** The credential check (default: loopback mode, no credential verifiers). */
  authenticator?: Authenticator;
  /**
   * Host names the gateway answers to besides IP literals and loopback names (the public URL's host is added
   * by the server). A request for any other name gets 403 (DNS rebinding).
   */
  allowedHosts?: readonly string[];
  /** Browser origins allowed besides loopback pages and the gateway's own (`https://app.example.com`). */
  allowedOrigins?: readonly string[];
}

/** The principal of a request that presented nothing and is not let in by its mode (public routes only). */
const STRANGER: Principal = Object.freeze({
  id: 'stranger',
  kind: 'anonymous',
  name: 'an unauthenticated client',
  scopes: new Set<string>(),
  metadata: Object.freeze({}),
  trustedBackend: false,
});

/**
 * Installs the edge on `app` (before any route is registered): the `onRequest` check and the `preHandler`
 * that runs the handler under the request's principal.
 * @throws RangeError naming `allowedHosts` or `allowedOrigins` for an entry that is not a host or origin.
 */
export function installEdge(app: FastifyInstance, options: EdgeOptions & { publicUrl?: string }): void {
  const rules = hostRules(options.publicUrl, options.allowedHosts, options.allowedOrigins);
  const authenticator = options.authenticator ?? createAuthenticator();
  app.decorateRequest('principal', null as unknown as Principal);
  app.decorate('authenticator', authenticator);
  app.addHook('onRequest', edgeCheck(rules, authenticator));
  app.addHook('preHandler', runAsPrincipal);
}

function edgeCheck(rules: HostRules, authenticator: Authenticator): onRequestHookHandler {
  return async (request, reply) => {
    const refusal = checkHostAndOrigin(
      rules,
      request.headers.host,
      anyOrigin(request) ? undefined : request.headers.origin,
    );
    if (refusal !== undefined) throw hostRefused(refusal);
    const access = accessOf(request);
    if (access === 'public' || access === 'self') {
      request.principal = authenticator.withoutCredential(request) ?? STRANGER;
      return;
    }
    let principal: Principal | undefined;
    try {
      principal = await authenticator.fromCredential(request);
    } catch (error) {
      if (isBreakwaterError(error) && error.code === 'unauthorized') {
        void reply.header('www-authenticate', authenticator.challenge(error));
      }
      throw error;
    }
    principal ??= authenticator.withoutCredential(request);
    if (principal === undefined) {
      if (authenticator.mode === 'loopback') {
        throw new BreakwaterError('unauthorized', {
          status: 403,
          message:
            'This gateway has no credentials configured and answers only clients on this machine; create an API key (breakwater keys create) to call it from elsewhere.',
          details: { reason: 'loopback_only' },
        });
      }
      const missing = new BreakwaterError('unauthorized', {
        status: 401,
        message: 'This endpoint needs a credential: send Authorization: Bearer <API key or access token>.',
        details: { reason: 'credentials_missing' },
      });
      void reply.header('www-authenticate', authenticator.challenge(missing));
      throw missing;
    }
    if (!access.some((scope) => hasScope(principal, scope))) {
      const scope = access.join(' ');
      const refused = new BreakwaterError('unauthorized', {
        status: 403,
        message: `This credential may not call this endpoint: it needs the scope ${access.join(' or ')}.`,
        details: { reason: 'insufficient_scope', scope, required: [...access] },
      });
      void reply.header('www-authenticate', authenticator.challenge(refused, principal));
      throw refused;
    }
    request.principal = principal;
  };
}

const runAsPrincipal: preHandlerHookHandler = (request, _reply, done) => {
  PrincipalContext.run(principalOf(request), done);
};

/** The request's principal; `system` for a request the edge never saw (a host without the edge). */
export function principalOf(request: FastifyRequest): Principal {
  return (request.principal as Principal | null) ?? PRINCIPALS.system;
}

const HOST_MESSAGES: Record<HostRefusal, string> = {
  host_missing: 'The request has no Host header.',
  host_malformed: 'The Host header is not a host name or address.',
  host_not_allowed:
    'The gateway does not answer to this host name; the operator can add it with --allowed-hosts (BREAKWATER_ALLOWED_HOSTS) or --public-url.',
  origin_not_allowed:
    'Requests from this web origin are not accepted; the operator can allow it with --allowed-origins (BREAKWATER_ALLOWED_ORIGINS).',
};

function hostRefused(reason: HostRefusal): BreakwaterError {
  const malformed = reason === 'host_missing' || reason === 'host_malformed';
  return new BreakwaterError(malformed ? 'invalid_payload' : 'unauthorized', {
    status: malformed ? 400 : 403,
    message: HOST_MESSAGES[reason],
    details: { reason },
  });
}
