/**
 * A real OAuth 2.1 authorization server for the tests: `oidc-provider` on a loopback port, with dynamic client
 * registration (RFC 7591), PKCE, resource indicators (RFC 8707) issuing JWT access tokens (RFC 9068) whose
 * `aud` is the requested resource, and a login and consent step that approve everything the client asks for
 * (the test plays the user; there is no page to click through).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider, { errors } from 'oidc-provider';

/** The test user every login signs in as. */
export const USER = 'alice';
/** Scopes the resource servers of this server know. */
export const RESOURCE_SCOPES = 'mcp secrets:read';
/** Access token lifetime, in seconds. */
export const ACCESS_TOKEN_TTL_S = 300;

export interface AuthorizationServer {
  /** `http://127.0.0.1:<port>`. */
  readonly issuer: string;
  /** Interactions the test answered, in order (`login`, `consent`). */
  readonly interactions: string[];
  close(): Promise<void>;
}

/**
 * Starts the server. Any `http://127.0.0.1:<port>/…` resource indicator is a resource server whose audience is
 * the indicator itself; tokens carry the user's `org_id` (`acme`) for the metadata-claims check.
 */
export async function startAuthorizationServer(): Promise<AuthorizationServer> {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const signingKey = { ...(await exportJWK(privateKey)), kid: 'as-key-1', alg: 'ES256', use: 'sig' };
  const http = createServer();
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const interactions: string[] = [];

  const provider = new Provider(issuer, {
    jwks: { keys: [signingKey] },
    clientDefaults: { id_token_signed_response_alg: 'ES256' },
    // `mcp` is listed so a client may register with it (RFC 7591 checks registered scopes against these).
    scopes: ['openid', 'offline_access', 'mcp'],
    pkce: { required: () => true },
    cookies: { keys: ['oauth-test-cookie-key'] },
    ttl: {
      AccessToken: ACCESS_TOKEN_TTL_S,
      AuthorizationCode: 60,
      Grant: 3600,
      Interaction: 600,
      Session: 3600,
    },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, indicator: string) => {
          if (!/^http:\/\/127\.0\.0\.1:\d+\//.test(indicator)) throw new errors.InvalidTarget();
          return {
            scope: RESOURCE_SCOPES,
            audience: indicator,
            accessTokenFormat: 'jwt',
            accessTokenTTL: ACCESS_TOKEN_TTL_S,
            jwt: { sign: { alg: 'ES256' } },
          };
        },
      },
    },
    findAccount: (_ctx: unknown, id: string) => ({ accountId: id, claims: () => ({ sub: id }) }),
    extraTokenClaims: () => ({ org_id: 'acme' }),
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
  });
  const callback = provider.callback();

  /** The user's side: log in as {@link USER}, then consent to every scope asked for. */
  const interact = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const details = await provider.interactionDetails(request, response);
    interactions.push(details.prompt.name);
    if (details.prompt.name === 'login') {
      await provider.interactionFinished(request, response, { login: { accountId: USER } });
      return;
    }
    const grant =
      (details.grantId !== undefined ? await provider.Grant.find(details.grantId) : undefined) ??
      new provider.Grant({ accountId: details.session!.accountId, clientId: details.params.client_id });
    const { missingOIDCScope, missingResourceScopes } = details.prompt.details;
    if (missingOIDCScope !== undefined) grant.addOIDCScope(missingOIDCScope.join(' '));
    for (const [resource, scopes] of Object.entries(missingResourceScopes ?? {})) {
      grant.addResourceScope(resource, scopes.join(' '));
    }
    await provider.interactionFinished(request, response, { consent: { grantId: await grant.save() } });
  };

  http.on('request', (request: IncomingMessage, response: ServerResponse) => {
    if (request.url?.startsWith('/interaction/')) {
      interact(request, response).catch((error: unknown) => {
        response.writeHead(500).end(String(error));
      });
      return;
    }
    callback(request, response);
  });

  return {
    issuer,
    interactions,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}

/**
 * Plays the browser: follows `authorizationUrl` through the authorization server's redirects (keeping its
 * cookies) until it redirects to `redirectUrl`, and returns the authorization code from that redirect.
 */
export async function authorizeInBrowser(authorizationUrl: URL, redirectUrl: string): Promise<string> {
  const cookies = new Map<string, string>();
  let url = authorizationUrl.href;
  for (let hop = 0; hop < 10; hop++) {
    const response = await fetch(url, {
      redirect: 'manual',
      headers: { cookie: [...cookies].map(([name, value]) => `${name}=${value}`).join('; ') },
    });
    for (const line of response.headers.getSetCookie()) {
      const pair = line.split(';', 1)[0]!;
      const eq = pair.indexOf('=');
      cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    const location = response.headers.get('location');
    await response.body?.cancel();
    if (location === null)
      throw new Error(`the authorization server stopped at HTTP ${response.status} (${url})`);
    const next = new URL(location, url);
    if (next.href.startsWith(redirectUrl)) {
      const code = next.searchParams.get('code');
      if (code === null) throw new Error(`the authorization server refused: ${next.search}`);
      return code;
    }
    url = next.href;
  }
  throw new Error('the authorization server redirected more than 10 times');
}
