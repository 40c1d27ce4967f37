import { createHash } from 'node:crypto';

/** The scope of requests that carry no credential header. */
export const ANONYMOUS_SCOPE = 'anonymous';

/** The headers read as a client's credential, first present wins. */
export const CREDENTIAL_HEADERS = ['authorization', 'x-api-key', 'api-key'] as const;

/**
 * The default client identity an idempotency key belongs to: `<header>:<SHA-256 hex of its value>` for the
 * first credential header present (`Authorization`, `X-API-Key`, `API-Key`; the raw credential is never
 * stored), or {@link ANONYMOUS_SCOPE} without one. Two clients with different credentials in these headers
 * never share a key, so neither can read the other's stored response. Every anonymous client shares one
 * scope, and so do clients authenticated some other way (a cookie, mTLS): give such routes a scope function
 * of their own (a session, a tenant, a certificate subject).
 *
 * The hash is unsalted: a database reader could test guesses of a weak credential (a Basic password) against
 * it. Use a scope function keyed with a server secret where that matters.
 */
export function defaultIdempotencyScope(request: {
  headers: Readonly<Record<string, string | readonly string[] | undefined>>;
}): string {
  for (const name of CREDENTIAL_HEADERS) {
    const value = request.headers[name];
    const credential = typeof value === 'string' ? value : value?.join(', ');
    if (credential !== undefined && credential !== '') {
      const prefix = name === 'authorization' ? 'token' : name;
      return `${prefix}:${createHash('sha256').update(credential).digest('hex')}`;
    }
  }
  return ANONYMOUS_SCOPE;
}
