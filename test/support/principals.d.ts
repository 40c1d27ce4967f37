/**
 * Principals for tests until the HTTP edge (src/http) sets `request.principal`: a key principal per name, and
 * an `onRequest` hook that stands in for the edge, taking the caller from an `x-test-principal` header
 * (absent: `local`, as in loopback mode) and running the rest of the request under `PrincipalContext`, as the
 * edge does.
 */
import type { FastifyInstance } from 'fastify';
import { type Principal } from '../../src/core/index.js';
/** The header naming the test caller: a name given to {@link keyPrincipal}, `admin`, `local` or `anonymous`. */
export declare const TEST_PRINCIPAL_HEADER = "x-test-principal";
/** A principal as an API key gives it: id `key:<name>`, the given scopes (default `mcp` and `jobs`), no `admin`. */
export declare function keyPrincipal(name: string, scopes?: readonly string[]): Principal;
/** `key:<name>` for any other name; `admin`, `local`, `anonymous` are core's. */
export declare function testPrincipal(name: string): Principal;
/**
 * Sets `request.principal` from the {@link TEST_PRINCIPAL_HEADER} (absent: `local`) and continues the request
 * under `PrincipalContext`. Call before `listen`/`inject`; it applies to every route of `app`.
 */
export declare function principalFromHeader(app: FastifyInstance): void;
/** The headers that make a request come from `name`. */
export declare function as(name: string): Record<string, string>;
