/**
 * Principals for tests until the HTTP edge (src/http) sets `request.principal`: a key principal per name, and
 * an `onRequest` hook that stands in for the edge, taking the caller from an `x-test-principal` header
 * (absent: `local`, as in loopback mode) and running the rest of the request under `PrincipalContext`, as the
 * edge does.
 */
import type { FastifyInstance } from 'fastify';
import { PRINCIPALS, PrincipalContext, type Principal } from '../../src/core/index.js';

/** The header naming the test caller: a name given to {@link keyPrincipal}, `admin`, `local` or `anonymous`. */
export const TEST_PRINCIPAL_HEADER = 'x-test-principal';

/** A principal as an API key gives it: id `key:<name>`, the given scopes (default `mcp` and `jobs`), no `admin`. */
export function keyPrincipal(name: string, scopes: readonly string[] = ['mcp', 'jobs']): Principal {
  return Object.freeze({
    id: `key:${name}`,
    kind: 'api_key',
    name,
    scopes: new Set(scopes),
    metadata: Object.freeze({}),
    trustedBackend: false,
  });
}

/** `key:<name>` for any other name; `admin`, `local`, `anonymous` are core's. */
export function testPrincipal(name: string): Principal {
  if (name === 'admin' || name === 'local' || name === 'anonymous') return PRINCIPALS[name];
  return keyPrincipal(name);
}

/**
 * Sets `request.principal` from the {@link TEST_PRINCIPAL_HEADER} (absent: `local`) and continues the request
 * under `PrincipalContext`. Call before `listen`/`inject`; it applies to every route of `app`.
 */
export function principalFromHeader(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const name = request.headers[TEST_PRINCIPAL_HEADER];
    const principal = typeof name === 'string' ? testPrincipal(name) : PRINCIPALS.local;
    request.principal = principal;
    PrincipalContext.run(principal, done);
  });
}

/** The headers that make a request come from `name`. */
export function as(name: string): Record<string, string> {
  return { [TEST_PRINCIPAL_HEADER]: name };
}
