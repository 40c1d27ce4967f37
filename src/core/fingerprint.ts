import { createHash } from 'node:crypto';
import { BreakwaterError } from './errors.js';

/**
 * The JSON Canonicalization Scheme form of `value` (RFC 8785): sorted keys (by UTF-16 code units), no
 * whitespace, ECMAScript number formatting. Equal data gives equal strings whatever the key order it was
 * built in. Follows `JSON.stringify` for what is left out: `toJSON` is honoured, object members whose value
 * is undefined, a function or a symbol are omitted, and such array elements (and holes) become `null`.
 * Iterative: any nesting depth is serialized, none overflows the call stack.
 *
 * @throws BreakwaterError `invalid_payload` when `value` has no JSON form (undefined, a function, a BigInt),
 *   holds a non-finite number (RFC 8785 forbids NaN and Infinity) or a cycle.
 */
export function canonicalJson(value: unknown): string {
  let text: string | undefined;
  try {
    text = serialize(value);
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
 * @throws BreakwaterError `invalid_payload`, with the same messages as {@link canonicalJson}; and "The value
 *   nests too deep to serialize as JSON." past the few thousand levels `JSON.stringify` can recurse.
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
    // JSON.stringify recurses: past about 4,000 levels the stack runs out.
    if (cause instanceof RangeError && /call stack/i.test(cause.message))
      throw invalid('The value nests too deep to serialize as JSON.');
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

/** An array or object being serialized, and where it is. */
interface Frame {
  readonly object: object;
  /** The member names, sorted (RFC 8785, section 3.2.3); null for an array. */
  readonly names: readonly string[] | null;
  readonly length: number;
  /** The next member or element to serialize. */
  next: number;
  /** Members written so far (an object's members without a JSON form are left out). */
  written: number;
  /** Where the member being serialized starts in the output, so one without a JSON form can be taken back. */
  mark: number;
}

/**
 * The canonical text of `value`, or `undefined` when it has no JSON form (undefined, function, symbol).
 * Iterative (an explicit stack of frames, one output of pieces joined once), so no nesting depth overflows
 * the call stack and the work stays linear in the output; members are read and their `toJSON` called in the
 * order a recursive walk would.
 */
function serialize(root: unknown): string | undefined {
  const ancestors = new Set<object>();
  const stack: Frame[] = [];
  const out: string[] = [];
  let value = root;
  let key = '';
  for (;;) {
    value = prepare(value, key);
    const parent = stack[stack.length - 1];
    if (typeof value === 'object' && value !== null) {
      if (ancestors.has(value)) throw invalid('The value contains a cycle.');
      ancestors.add(value);
      // Default sort compares UTF-16 code units, which is what RFC 8785, section 3.2.3 asks for.
      const names = Array.isArray(value) ? null : Object.keys(value).sort();
      const length = names === null ? (value as unknown[]).length : names.length;
      out.push(names === null ? '[' : '{');
      stack.push({ object: value, names, length, next: 0, written: 0, mark: 0 });
    } else {
      const text = scalar(value);
      if (parent === undefined) return text;
      if (text !== undefined) {
        out.push(text);
        parent.written++;
      } else if (parent.names === null) {
        out.push('null');
        parent.written++;
      } else out.length = parent.mark; // a member without a JSON form is left out, name and all
    }
    // The next member to serialize; each frame with none left closes, and counts as written in its parent.
    for (;;) {
      const top = stack[stack.length - 1]!;
      if (top.next < top.length) {
        const i = top.next++;
        top.mark = out.length;
        if (top.written > 0) out.push(',');
        if (top.names === null) {
          key = String(i);
          value = (top.object as unknown[])[i];
        } else {
          key = top.names[i]!;
          out.push(`${JSON.stringify(key)}:`);
          value = (top.object as Record<string, unknown>)[key];
        }
        break;
      }
      stack.pop();
      ancestors.delete(top.object);
      out.push(top.names === null ? ']' : '}');
      const below = stack[stack.length - 1];
      if (below === undefined) return out.join('');
      below.written++;
    }
  }
}

/** `value` as JSON sees it: its `toJSON(key)` result, a boxed primitive unboxed. */
function prepare(value: unknown, key: string): unknown {
  if (
    (typeof value === 'object' && value !== null) ||
    (typeof value === 'bigint' && typeof (value as { toJSON?: unknown }).toJSON === 'function')
  ) {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') value = (toJSON as (key: string) => unknown).call(value, key);
  }
  // Boxed primitives serialize as their primitive value, as in JSON.stringify.
  if (value instanceof Number) return Number(value);
  if (value instanceof String) return String(value);
  if (value instanceof Boolean) return value.valueOf();
  return value;
}

/** The text of a value that is not an array or object; undefined when it has no JSON form. */
function scalar(value: unknown): string | undefined {
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
  return 'null';
}
