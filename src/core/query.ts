/**
 * Query parameters given more than once where one value is expected. A query-string parser (Node's
 * `querystring`, which Fastify uses) makes a repeated parameter (`?source=a&source=b`) an array; a route that
 * expects one string then fails in whatever reads it, or a schema refuses it with a message about types.
 */
import { BreakwaterError } from './errors.js';

const repeatableOf = new WeakMap<object, ReadonlySet<string>>();

const NONE: ReadonlySet<string> = new Set();

/**
 * The parameters of a querystring JSON Schema (`{ type: 'object', properties }`) that may take several
 * values: every property typed `array` (alone or among other types) or not typed at all. Every other
 * parameter, declared or not, takes one value. Cached per schema object; no schema, no such parameter.
 */
export function repeatableParameters(schema: unknown): ReadonlySet<string> {
  if (typeof schema !== 'object' || schema === null) return NONE;
  const cached = repeatableOf.get(schema);
  if (cached !== undefined) return cached;
  const properties = (schema as { properties?: unknown }).properties;
  const names = new Set<string>();
  if (typeof properties === 'object' && properties !== null) {
    for (const [name, property] of Object.entries(properties)) {
      const type = (property as { type?: unknown } | null)?.type;
      const types = Array.isArray(type) ? type : [type];
      if (type === undefined || types.includes('array')) names.add(name);
    }
  }
  repeatableOf.set(schema, names);
  return names;
}

/**
 * Refuses a parsed query (`{ name: value | value[] }`) in which a parameter not in `repeatable` is an array.
 * @throws BreakwaterError `invalid_payload` (400), "The query parameter source was given 2 times; it takes
 *   one value.", `details { reason: 'repeated_parameter', parameter }`.
 */
export function refuseRepeated(query: unknown, repeatable: ReadonlySet<string> = NONE): void {
  if (typeof query !== 'object' || query === null) return;
  for (const [name, value] of Object.entries(query)) {
    if (Array.isArray(value) && !repeatable.has(name)) {
      throw new BreakwaterError('invalid_payload', {
        message: `The query parameter ${name} was given ${value.length} times; it takes one value.`,
        details: { reason: 'repeated_parameter', parameter: name },
      });
    }
  }
}
