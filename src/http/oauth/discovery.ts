/**
 * Finding the authorization server's key set: its metadata document's `jwks_uri` (RFC 8414; OpenID Connect
 * Discovery 1.0), fetched once and kept.
 */
import { BreakwaterError } from '../../core/index.js';
import { isLoopbackHost, parseUrl } from './options.js';

/**
 * The metadata URLs of `issuer`, in the order the MCP authorization spec gives clients ("Authorization
 * Server Metadata Discovery"): for `https://as.example.com/tenant1`,
 * `/.well-known/oauth-authorization-server/tenant1`, `/.well-known/openid-configuration/tenant1`,
 * `/tenant1/.well-known/openid-configuration`; for an issuer without a path, the first two without it.
 */
export function metadataUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname.replace(/\/$/, '');
  if (path === '') {
    return [
      `${url.origin}/.well-known/oauth-authorization-server`,
      `${url.origin}/.well-known/openid-configuration`,
    ];
  }
  return [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}/.well-known/openid-configuration${path}`,
    `${url.origin}${path}/.well-known/openid-configuration`,
  ];
}

/**
 * The `jwks_uri` of `issuer`'s metadata: the first of {@link metadataUrls} that answers 200 with a JSON
 * object. A 4xx moves on to the next URL (the document may live at another); anything else stops.
 * The document's `issuer` must be `issuer` exactly (RFC 8414, section 3.3), and its `jwks_uri` an https URL
 * (http only on a loopback host).
 * @throws BreakwaterError `upstream_unavailable` (503, `details.reason: 'issuer_metadata_unavailable'`) when
 *   no document can be read or it does not pass those checks: a caller's token is not at fault, so it is not
 *   a 401.
 */
export async function discoverJwksUri(
  issuer: string,
  fetchFn: typeof fetch,
  timeoutMs: number,
): Promise<string> {
  const problems: string[] = [];
  for (const url of metadataUrls(issuer)) {
    let response: Response;
    try {
      response = await fetchFn(url, {
        headers: { accept: 'application/json' },
        redirect: 'manual',
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw unavailable(
        issuer,
        `${url}: ${(error as Error).name === 'TimeoutError' ? 'timed out' : 'unreachable'}`,
        error,
      );
    }
    if (response.status !== 200) {
      await response.body?.cancel();
      problems.push(`${url}: HTTP ${response.status}`);
      if (response.status >= 400 && response.status < 500) continue;
      throw unavailable(issuer, problems.join('; '));
    }
    let document: unknown;
    try {
      document = await response.json();
    } catch (error) {
      throw unavailable(issuer, `${url}: not JSON`, error);
    }
    return jwksUriOf(issuer, url, document);
  }
  throw unavailable(issuer, problems.join('; '));
}

function jwksUriOf(issuer: string, url: string, document: unknown): string {
  if (typeof document !== 'object' || document === null)
    throw unavailable(issuer, `${url}: not a JSON object`);
  const { issuer: named, jwks_uri: jwksUri } = document as { issuer?: unknown; jwks_uri?: unknown };
  if (named !== issuer) {
    throw unavailable(
      issuer,
      `${url} names the issuer ${JSON.stringify(named)}, not ${JSON.stringify(issuer)}`,
    );
  }
  const parsed = typeof jwksUri === 'string' ? parseUrl(jwksUri) : null;
  if (
    parsed === null ||
    !(parsed.protocol === 'https:' || (parsed.protocol === 'http:' && isLoopbackHost(parsed.hostname)))
  ) {
    throw unavailable(issuer, `${url} has no https jwks_uri`);
  }
  return jwksUri as string;
}

function unavailable(issuer: string, why: string, cause?: unknown): BreakwaterError {
  return new BreakwaterError('upstream_unavailable', {
    source: 'oauth',
    message: `The authorization server's metadata could not be read (${why}), so access tokens cannot be checked; try again shortly.`,
    details: { reason: 'issuer_metadata_unavailable', issuer },
    cause,
  });
}
