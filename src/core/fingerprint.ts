import { createHash } from 'node:crypto';
import { BreakwaterError } from './errors.js';

/**
 * The JSON Canonicalization Scheme form of `value` (RFC 8785): sorted keys (by UTF-16 code units), no
 * whitespace, ECMAScript number formatting. Equal data gives equal strings whatever the key order it was
 * built in. Follows `JSON.stringify` for what is left out: `toJSON` is honoured, object members whose value
 * is undefined, a function or a symbol are omitted, and such array elements (and holes) become `null`.
 *
 * @throws BreakwaterError `invalid_payload` when `value` has no JSON form (undefined, a function, a BigInt),
 *   holds a non-finite number (RFC 8785 forbids NaN and Infinity) or a cycle.
 */
export function canonicalJson(value: unknown): string {
  let text: string | undefined;
  try {
    text = serialize(value, '', new Set());
  } catch (cause) {
    if (cause instanceof BreakwaterError) throw cause;
    throw invalid('The value cannot be serialized as JSON.', cause);
  }
  if (text === undefined) throw invalid('The value cannot be serialized as JSON.');
  return text;
}

/**
 * `JSON.stringify(value)`, refusing exactly what {@link canonicalJson} refuses (no JSON form at the top, a
 * non-finite number anywhere, a BigInt without `toJSON`, a cycle) but without its key sort: the check a job
 * payload, result or partial gets on the hot path, where the order of keys does not matter.
 * @throws BreakwaterError `invalid_payload`, with the same messages as {@link canonicalJson}.
 */
export function checkedJson(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value, refuseNonFinite);
  } catch (cause) {
    if (cause instanceof BreakwaterError) throw cause;
    if (cause instanceof TypeError && /BigInt/i.test(cause.message))
      throw invalid('A BigInt has no JSON form.');
    if (cause instanceof TypeError && /circular/i.test(cause.message))
      throw invalid('The value contains a cycle.');
    throw invalid('The value cannot be serialized as JSON.', cause);
  }
  if (text === undefined) throw invalid('The value cannot be serialized as JSON.');
  return text;
}

/** The replacer of {@link checkedJson}: runs after `toJSON`, before a boxed number is unboxed. */
function refuseNonFinite(_key: string, value: unknown): unknown {
  if (
    typeof value === 'number' ? !Number.isFinite(value) : value instanceof Number && !Number.isFinite(+value)
  ) {
    throw invalid(`The number ${Number(value)} has no JSON form.`);
  }
  return value;
}

/** SHA-256 (FIPS 180-4) of the canonical JSON of `value`, as 64 lowercase hex characters. */
export function fingerprint(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

function invalid(message: string, cause?: unknown): BreakwaterError {
  return new BreakwaterError('invalid_payload', { message, cause });
}

/** The canonical text of `value`, or `undefined` when it has no JSON form (undefined, function, symbol). */
function serialize(value: unknown, key: string, ancestors: Set<object>): string | undefined {
  if (
    (typeof value === 'object' && value !== null) ||
    (typeof value === 'bigint' && typeof (value as { toJSON?: unknown }).toJSON === 'function')
  ) {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') value = (toJSON as (key: string) => unknown).call(value, key);
  }
  // Boxed primitives serialize as their primitive value, as in JSON.stringify.
  if (value instanceof Number) value = Number(value);
  else if (value instanceof String) value = String(value);
  else if (value instanceof Boolean) value = value.valueOf();

  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw invalid(`The number ${value} has no JSON form.`);
      // ECMAScript Number-to-String is RFC 8785's number format; JSON.stringify(-0) is "0".
      return JSON.stringify(value);
    case 'bigint':
      throw invalid('A BigInt has no JSON form.');
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
  }
  if (value === null) return 'null';

  const object = value as object;
  if (ancestors.has(object)) throw invalid('The value contains a cycle.');
  ancestors.add(object);
  let text: string;
  if (Array.isArray(object)) {
    const items: string[] = [];
    for (let i = 0; i < object.length; i++) items.push(serialize(object[i], String(i), ancestors) ?? 'null');
    text = `[${items.join(',')}]`;
  } else {
    const members: string[] = [];
    const record = object as Record<string, unknown>;
    // Default sort compares UTF-16 code units, which is what RFC 8785, section 3.2.3 asks for.
    for (const name of Object.keys(record).sort()) {
      const member = serialize(record[name], name, ancestors);
      if (member !== undefined) members.push(`${JSON.stringify(name)}:${member}`);
    }
    text = `{${members.join(',')}}`;
  }
  ancestors.delete(object);
  return text;
}
