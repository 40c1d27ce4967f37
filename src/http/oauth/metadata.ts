/**
 * The protected resource metadata document (RFC 9728) as Fastify routes, so MCP clients find the
 * authorization server from a 401 (the MCP authorization spec's "Authorization Server Location").
 */
import type { FastifyInstance } from 'fastify';
import type { OAuthVerifier } from './verifier.js';

/** `Cache-Control` of the metadata: public, five minutes (a moved authorization server is seen soon). */
export const METADATA_CACHE_CONTROL = 'public, max-age=300';

/**
 * Registers `GET` (and Fastify's automatic `HEAD`) on each of `verifier.metadataPaths`: the path-inserted
 * `/.well-known/oauth-protected-resource/mcp` (RFC 9728, section 3.1) and the root
 * `/.well-known/oauth-protected-resource` (the MCP spec's fallback). Each answers 200 `application/json`
 * with `verifier.metadata()`, `Cache-Control: public, max-age=300` and `Access-Control-Allow-Origin: *`
 * (the document is public and holds no secret; browser-based MCP clients read it across origins).
 *
 * These routes must stay public: the HTTP edge admits them without a credential and without the foreign
 * `Origin` check, or a client could never learn where to get a token.
 *
 * ```ts
 * const oauth = createOAuthVerifier({ issuer, audience: 'https://gw.example.com/mcp' });
 * oauthMetadataRoutes(oauth)(app); // before app.listen()
 * ```
 */
export function oauthMetadataRoutes(verifier: OAuthVerifier): (app: FastifyInstance) => void {
  const body = JSON.stringify(verifier.metadata());
  return (app) => {
    for (const url of verifier.metadataPaths) {
      app.get(url, async (_request, reply) => {
        return reply
          .header('content-type', 'application/json; charset=utf-8')
          .header('cache-control', METADATA_CACHE_CONTROL)
          .header('access-control-allow-origin', '*')
          .send(body);
      });
    }
  };
}
