/**
 * The MCP client side of the OAuth end-to-end test: an `OAuthClientProvider` for the official SDK that keeps
 * everything in memory and plays the user's browser itself, and a fetch that records every exchange.
 */
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { authorizeInBrowser } from './authorization-server.js';

/** Where the authorization server sends the browser back; nothing listens there (the code is read from the redirect). */
export const REDIRECT_URL = 'http://127.0.0.1:1/callback';

/**
 * An in-memory provider for a public client (PKCE, no secret) registered dynamically. Its
 * `redirectToAuthorization` follows the authorization URL to the end (login and consent included) and keeps the
 * code for `transport.finishAuth(code)`, as an app's redirect handler would.
 */
export class TestOAuthProvider implements OAuthClientProvider {
  /** Authorization codes received, in order. */
  readonly codes: string[] = [];
  /** The authorization URLs the SDK sent the "browser" to, in order. */
  readonly authorizationUrls: URL[] = [];
  savedTokens: OAuthTokens | undefined;
  private client: OAuthClientInformationMixed | undefined;
  private verifier = '';
  /** Set only when the test overrides the RFC 8707 resource the SDK asks a token for. */
  validateResourceURL?: (serverUrl: string | URL, resource?: string) => Promise<URL | undefined>;

  /** @param resource asks tokens for this resource instead of the one the metadata names (a wrong-audience token). */
  constructor(resource?: string) {
    if (resource !== undefined) this.validateResourceURL = async () => new URL(resource);
  }

  get redirectUrl(): string {
    return REDIRECT_URL;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'breakwater-oauth-test',
      redirect_uris: [REDIRECT_URL],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.client;
  }

  saveClientInformation(information: OAuthClientInformationMixed): void {
    this.client = information;
  }

  tokens(): OAuthTokens | undefined {
    return this.savedTokens;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.savedTokens = tokens;
  }

  async redirectToAuthorization(authorizationUrl: URL): Promise<void> {
    this.authorizationUrls.push(authorizationUrl);
    this.codes.push(await authorizeInBrowser(authorizationUrl, REDIRECT_URL));
  }

  saveCodeVerifier(codeVerifier: string): void {
    this.verifier = codeVerifier;
  }

  codeVerifier(): string {
    return this.verifier;
  }
}

/** One HTTP exchange the client made. */
export interface Exchange {
  readonly method: string;
  readonly url: string;
  readonly status: number;
  /** The request's `Authorization` header, if any. */
  readonly authorization: string | null;
  /** The response's `WWW-Authenticate` header, if any. */
  readonly wwwAuthenticate: string | null;
}

/** A fetch that records each exchange in `log` (method, URL, status and the two auth headers). */
export function recordingFetch(log: Exchange[]): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const response = await fetch(input, init);
    log.push({
      method: request.method,
      url: request.url,
      status: response.status,
      authorization: request.headers.get('authorization'),
      wwwAuthenticate: response.headers.get('www-authenticate'),
    });
    return response;
  };
}
