/**
 * Query parameters given more than once where one value is expected. A query-string parser (Node's
 * `querystring`, which Fastify uses) makes a repeated parameter (`?source=a&source=b`) an array; a route that
 * expects one string then fails in whatever reads it, or a schema refuses it with a message about types.
 */
import { BreakwaterError } from './errors.js';

const singleValuedOf = new WeakMap<object, readonly string[]>();

/**
 * The parameters of a querystring JSON Schema (`{ type: 'object', properties }`) that take one value: every
 * property whose `type` is given and does not include `array`. Cached per schema object.
 */
export function singleValuedParameters(schema: unknown): readonly string[] {
  if (typeof schema !== 'object' || schema === null) return [];
  const cached = singleValuedOf.get(schema);
  if (cached !== undefined) return cached;
  const properties = (schema as { properties?: unknown }).properties;
  const names: string[] = [];
  if (typeof properties === 'object' && properties !== null) {
    for (const [name, property] of Object.entries(properties)) {
      const type = (property as { type?: unknown } | null)?.type;
      const types = Array.isArray(type) ? type : [type];
      if (type !== undefined && !types.includes('array')) names.push(name);
    }
  }
  singleValuedOf.set(schema, names);
  return names;
}

/**
 * Refuses a parsed query (`{ name: value | value[] }`) in which one of `singleValued` is an array.
 * @throws BreakwaterError `invalid_payload` (400), "The query parameter source was given 2 times; it takes
 *   one value.", `details { reason: 'repeated_parameter', parameter }`.
 */
export function checkSingleValued(query: unknown, singleValued: readonly string[]): void {
  if (typeof query !== 'object' || query === null) return;
  for (const name of singleValued) {
    const value = (query as Record<string, unknown>)[name];
    if (Array.isArray(value)) {
      throw new BreakwaterError('invalid_payload', {
        message: `The query parameter ${name} was given ${value.length} times; it takes one value.`,
        details: { reason: 'repeated_parameter', parameter: name },
      });
    }
  }
}
