/**
 * The edge's checks of request input that every route gets, before its handler runs:
 * - the `application/json` body parser: Fastify's own (`secure-json-parse`, refusing `__proto__` and
 *   `constructor.prototype` keys), then a depth check, so that no route, nor anything a route hands the body to
 *   (a serializer, a fingerprint, a schema validator, the MCP SDK), walks a body nested deeper than
 *   `MAX_JSON_DEPTH`. `JSON.parse` itself is iterative; most walkers after it recurse and overflow the stack
 *   past a few thousand levels;
 * - repeated query parameters: a parameter given more than once is refused with a 400 naming it unless the
 *   route's querystring schema says it takes several values (typed `array`), rather than a schema message
 *   about types, a parameter the route ignores passing as an array, or (without a schema) a 500 from
 *   whatever reads the array.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { jsonDepthExceeds, refuseRepeated, repeatableParameters, tooDeep } from '../core/index.js';

/**
 * Replaces the JSON parser of `app` (and of the plugins registered in it after this call that keep it): a
 * body nested past `MAX_JSON_DEPTH` (64) fails with a 400 `invalid_payload` (`details.reason: 'too_deep'`),
 * before any handler or hook after parsing runs.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    parse(request, body as string, (error: Error | null, value?: unknown) => {
      if (error !== null) done(error, undefined);
      else if (jsonDepthExceeds(value)) done(tooDeep(), undefined);
      else done(null, value);
    });
  });
}

/**
 * A `preValidation` hook (`createServer` adds it to every route; a capability mounted on any Fastify app
 * may add it to its own): refuses a request that repeats a query parameter its route does not take several
 * values of. Which those are is read from the route's querystring schema (`repeatableParameters`: properties
 * typed `array`, or untyped); a parameter the schema does not declare, and any parameter of a route without
 * a querystring schema, takes one value.
 * @throws BreakwaterError `invalid_payload` (400), `details { reason: 'repeated_parameter', parameter }`.
 */
export async function refuseRepeatedQuery(request: FastifyRequest): Promise<void> {
  refuseRepeated(request.query, repeatableParameters(request.routeOptions.schema?.querystring));
}
