/**
 * Shared test helpers for http/oauth/ (not a test file itself): a real HTTP server on a loopback port that
 * plays an authorization server's published side (its metadata document and its JWKS), and a signer for
 * access tokens with its key.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK, type JWTPayload } from 'jose';

/** A request handler that replaces the default answer for one path. */
export type Handler = (request: IncomingMessage, response: ServerResponse) => void;

export interface KeyServer {
  /** `http://127.0.0.1:<port>`: the issuer. */
  readonly issuer: string;
  /** `<issuer>/jwks`. */
  readonly jwksUrl: string;
  /** Every request's path, in order. */
  readonly requests: string[];
  /** Answers replacing the defaults, by path (`/jwks`, `/.well-known/oauth-authorization-server`, …). */
  readonly handlers: Map<string, Handler>;
  /** The published key (`kid: 'k1'`, ES256) and its private half. */
  readonly publicJwk: JWK;
  readonly privateKey: CryptoKey;
  close(): Promise<void>;
}

/**
 * Starts the server. By default it answers `/.well-known/oauth-authorization-server` with
 * `{ issuer, jwks_uri }` and `/jwks` with `{ keys: [publicJwk] }`; anything else is 404.
 */
export async function startKeyServer(): Promise<KeyServer> {
  const { publicKey, privateKey } = await generateKeyPair('ES256');
  const publicJwk: JWK = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  const requests: string[] = [];
  const handlers = new Map<string, Handler>();
  const server = createServer((request, response) => {
    const path = request.url ?? '/';
    requests.push(path);
    const handler = handlers.get(path);
    if (handler !== undefined) return handler(request, response);
    if (path === '/.well-known/oauth-authorization-server')
      return json(response, 200, { issuer, jwks_uri: `${issuer}/jwks` });
    if (path === '/jwks') return json(response, 200, { keys: [publicJwk] });
    json(response, 404, { error: 'not_found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    jwksUrl: `${issuer}/jwks`,
    requests,
    handlers,
    publicJwk,
    privateKey,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Writes `body` as JSON with `status`. */
export function json(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** What {@link signToken} puts in a token; `undefined` leaves a claim out. */
export interface TokenSpec {
  readonly claims?: JWTPayload;
  readonly header?: { alg?: string; kid?: string; typ?: string };
  /** The signing key (default: the server's). */
  readonly key?: CryptoKey | Uint8Array;
}

/**
 * A signed access token: `iss`, `aud`, `sub: 'alice'`, `scope: 'mcp'`, `iat` = `nowS`, `exp` = `nowS + 300`,
 * header `{ alg: 'ES256', kid: 'k1', typ: 'at+jwt' }`, each overridable (an `undefined` claim is left out).
 */
export async function signToken(
  server: KeyServer,
  audience: string,
  nowS: number,
  spec: TokenSpec = {},
): Promise<string> {
  const claims: JWTPayload = {
    iss: server.issuer,
    aud: audience,
    sub: 'alice',
    scope: 'mcp',
    iat: nowS,
    exp: nowS + 300,
    ...spec.claims,
  };
  for (const key of Object.keys(claims)) if (claims[key] === undefined) delete claims[key];
  const header = { alg: 'ES256', kid: 'k1', typ: 'at+jwt', ...spec.header };
  return new SignJWT(claims).setProtectedHeader(header).sign(spec.key ?? server.privateKey);
}
