import type { InputSchema } from '../store/index.js';

/**
 * The flat schemas `ctx.requestInput` accepts and the answers they allow: MCP elicitation's `requestedSchema`
 * (MCP 2025-11-25, "Elicitation", requested schema): an object of primitive properties, so a client can render
 * it as a form. Property types: `string` (`minLength`, `maxLength`, `enum`; `format` and `title`/`description`
 * kept for the client, not checked), `number` and `integer` (`minimum`, `maximum`), `boolean`, and `array` of
 * `string` with `items.enum` (a multi-select; `minItems`, `maxItems`). Nested objects are refused, as there.
 */

/** Most properties of one schema, and longest schema (JSON characters): a question, not a document. */
export const INPUT_SCHEMA_BOUNDS = { maxProperties: 50, maxLength: 16_384 } as const;

const PRIMITIVES = new Set(['string', 'number', 'integer', 'boolean', 'array']);

/** Why `schema` is not a flat schema this runtime checks answers against, or undefined when it is one. */
export function schemaProblem(schema: unknown): string | undefined {
  if (!isObject(schema) || schema.type !== 'object' || !isObject(schema.properties)) {
    return "the schema must be { type: 'object', properties: { … } }";
  }
  if (JSON.stringify(schema).length > INPUT_SCHEMA_BOUNDS.maxLength) {
    return `the schema must be at most ${INPUT_SCHEMA_BOUNDS.maxLength} characters of JSON`;
  }
  const names = Object.keys(schema.properties);
  if (names.length === 0 || names.length > INPUT_SCHEMA_BOUNDS.maxProperties) {
    return `the schema must have 1..${INPUT_SCHEMA_BOUNDS.maxProperties} properties`;
  }
  for (const name of names) {
    const property = schema.properties[name];
    if (!isObject(property) || typeof property.type !== 'string' || !PRIMITIVES.has(property.type)) {
      return `property ${name} must have type string, number, integer, boolean or array (of string enum)`;
    }
    if (property.type === 'array' && !(isObject(property.items) && isStringArray(property.items.enum))) {
      return `property ${name}: an array must have items.enum, a list of strings`;
    }
    if (property.enum !== undefined && !isStringArray(property.enum)) {
      return `property ${name}: enum must be a list of strings`;
    }
  }
  const required = schema.required;
  if (
    required !== undefined &&
    !(isStringArray(required) && required.every((name) => names.includes(name)))
  ) {
    return 'required must list property names of the schema';
  }
  return undefined;
}

/**
 * What is wrong with `answer` under `schema` (one sentence per problem, empty when it fits): an object with
 * only the schema's properties, the required ones present, each of its property's type and within its
 * bounds. `schema` must have passed {@link schemaProblem}.
 */
export function answerProblems(schema: InputSchema, answer: unknown): string[] {
  if (!isObject(answer)) return ['the answer must be an object of the requested fields'];
  const problems: string[] = [];
  for (const name of schema.required ?? []) {
    if (answer[name] === undefined) problems.push(`${name} is required`);
  }
  for (const [name, value] of Object.entries(answer)) {
    const property = schema.properties[name];
    if (property === undefined) {
      problems.push(`${name} is not a requested field`);
      continue;
    }
    const problem = valueProblem(property, value);
    if (problem !== undefined) problems.push(`${name} ${problem}`);
  }
  return problems;
}

function valueProblem(property: Record<string, unknown>, value: unknown): string | undefined {
  const { type } = property;
  if (type === 'boolean') return typeof value === 'boolean' ? undefined : 'must be true or false';
  if (type === 'number' || type === 'integer') {
    if (typeof value !== 'number' || !Number.isFinite(value)) return 'must be a number';
    if (type === 'integer' && !Number.isInteger(value)) return 'must be an integer';
    if (typeof property.minimum === 'number' && value < property.minimum)
      return `must be >= ${property.minimum}`;
    if (typeof property.maximum === 'number' && value > property.maximum)
      return `must be <= ${property.maximum}`;
    return undefined;
  }
  if (type === 'array') {
    const allowed = (property.items as { enum: string[] }).enum;
    if (!isStringArray(value) || !value.every((item) => allowed.includes(item))) {
      return `must be a list of: ${allowed.join(', ')}`;
    }
    if (typeof property.minItems === 'number' && value.length < property.minItems) {
      return `must have at least ${property.minItems} items`;
    }
    if (typeof property.maxItems === 'number' && value.length > property.maxItems) {
      return `must have at most ${property.maxItems} items`;
    }
    return undefined;
  }
  if (typeof value !== 'string') return 'must be a string';
  if (isStringArray(property.enum) && !property.enum.includes(value)) {
    return `must be one of: ${property.enum.join(', ')}`;
  }
  if (typeof property.minLength === 'number' && value.length < property.minLength) {
    return `must be at least ${property.minLength} characters`;
  }
  if (typeof property.maxLength === 'number' && value.length > property.maxLength) {
    return `must be at most ${property.maxLength} characters`;
  }
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}
