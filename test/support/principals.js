import { PRINCIPALS, PrincipalContext } from '../../src/core/index.js';
/** The header naming the test caller: a name given to {@link keyPrincipal}, `admin`, `local` or `anonymous`. */
export const TEST_PRINCIPAL_HEADER = 'x-test-principal';
/** A principal as an API key gives it: id `key:<name>`, the given scopes (default `mcp` and `jobs`), no `admin`. */
export function keyPrincipal(name, scopes = ['mcp', 'jobs']) {
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
export function testPrincipal(name) {
    if (name === 'admin' || name === 'local' || name === 'anonymous')
        return PRINCIPALS[name];
    return keyPrincipal(name);
}
/**
 * Sets `request.principal` from the {@link TEST_PRINCIPAL_HEADER} (absent: `local`) and continues the request
 * under `PrincipalContext`. Call before `listen`/`inject`; it applies to every route of `app`.
 */
export function principalFromHeader(app) {
    app.addHook('onRequest', (request, _reply, done) => {
        const name = request.headers[TEST_PRINCIPAL_HEADER];
        const principal = typeof name === 'string' ? testPrincipal(name) : PRINCIPALS.local;
        request.principal = principal;
        PrincipalContext.run(principal, done);
    });
}
/** The headers that make a request come from `name`. */
export function as(name) {
    return { [TEST_PRINCIPAL_HEADER]: name };
}
