/**
 * How deep JSON may nest where Breakwater reads it from a client. `JSON.parse` is iterative, but most of what
 * walks a parsed value afterwards is not: `JSON.stringify` overflows the stack past about 4,000 levels, as do
 * cost estimates, canonical JSON, redaction and schema validators. A body nested deeper than
 * {@link MAX_JSON_DEPTH} is refused with a 400 before anything walks it, so no client can turn a stack
 * overflow into a 5xx (or into a misleading "store unavailable").
 */
import { BreakwaterError } from './errors.js';

/**
 * Most levels of arrays and objects a JSON request body may nest: `{}` and `[]` are one level, `{"a":[1]}`
 * two. 64, as in .NET's System.Text.Json (`JsonReaderOptions.MaxDepth` default): real payloads (chat
 * messages with tool schemas, webhook events, tool arguments) nest a dozen levels or so.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether `value` nests more than `maxDepth` levels of arrays and objects (a scalar is 0 levels, `[]` one).
 * Iterative, depth first, so it stops at the first path past the limit; a value within the limit is walked
 * whole (O(size)). A cycle counts as too deep. Only own enumerable members are followed, as JSON has no other.
 */
export function jsonDepthExceeds(value: unknown, maxDepth: number = MAX_JSON_DEPTH): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const nodes: object[] = [value];
  const depths: number[] = [1];
  while (nodes.length > 0) {
    const node = nodes.pop()!;
    const depth = depths.pop()!;
    if (depth > maxDepth) return true;
    const children: readonly unknown[] = Array.isArray(node) ? node : Object.values(node);
    for (const child of children) {
      if (typeof child === 'object' && child !== null) {
        nodes.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/**
 * The 400 for a value nested past `maxDepth`: `invalid_payload` with `details { reason: 'too_deep',
 * max_depth }` and the message "<subject> nests too deep: at most 64 levels of arrays and objects are
 * accepted." (`subject` default "The request body").
 */
export function tooDeep(subject = 'The request body', maxDepth: number = MAX_JSON_DEPTH): BreakwaterError {
  return new BreakwaterError('invalid_payload', {
    message: `${subject} nests too deep: at most ${maxDepth} levels of arrays and objects are accepted.`,
    details: { reason: 'too_deep', max_depth: maxDepth },
  });
}

/**
 * Refuses `value` when it nests past `maxDepth` (see {@link jsonDepthExceeds}).
 * @throws BreakwaterError `invalid_payload` (400) from {@link tooDeep}.
 */
export function checkJsonDepth(value: unknown, subject?: string, maxDepth: number = MAX_JSON_DEPTH): void {
  if (jsonDepthExceeds(value, maxDepth)) throw tooDeep(subject, maxDepth);
}
