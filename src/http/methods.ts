/**
 * Method sets (RFC 9110, section 9.2): the one place that says which methods are safe (no effect beyond
 * reading) and which are idempotent (repeating them has no further effect).
 */

/** Safe methods (RFC 9110, section 9.2.1). */
export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE']);

/** Idempotent methods (RFC 9110, section 9.2.2): the safe ones, PUT and DELETE. */
export const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set([...SAFE_METHODS, 'PUT', 'DELETE']);

/** True for a safe method, whatever its case. */
export function isSafeMethod(method: string): boolean {
  return SAFE_METHODS.has(method.toUpperCase());
}
