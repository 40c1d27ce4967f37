import { createHash } from 'node:crypto';

/** The scope of requests that carry no `Authorization` header. */
export const ANONYMOUS_SCOPE = 'anonymous';

/**
 * The default client identity an idempotency key belongs to: `token:<SHA-256 hex of the Authorization
 * header value>` (so the raw credential is never stored), or {@link ANONYMOUS_SCOPE} without one. Two
 * clients with different credentials never share a key, so neither can read the other's stored response.
 * Every anonymous client shares one scope: give anonymous routes a scope function of their own (a session,
 * a tenant) when they need isolation.
 */
export function defaultIdempotencyScope(request: {
  headers: Readonly<Record<string, string | readonly string[] | undefined>>;
}): string {
  const value = request.headers.authorization;
  const authorization = typeof value === 'string' ? value : value?.join(', ');
  if (authorization === undefined || authorization === '') return ANONYMOUS_SCOPE;
  return `token:${createHash('sha256').update(authorization).digest('hex')}`;
}
