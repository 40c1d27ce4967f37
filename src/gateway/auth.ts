/**
 * The gateway's front door, assembled (docs/security.md): which credentials it accepts, its auth mode, and
 * the names, origins and proxies it trusts. Kept apart from gateway.ts so that file stays about the order
 * things start and stop in.
 */
import type { Clock } from '../core/index.js';
import { createAuthenticator, isLoopbackName, type Authenticator, type AuthMode } from '../http/index.js';
import { createOAuthVerifier, type OAuthOptions, type OAuthVerifier } from '../http/oauth/index.js';
import type { ApiKeys } from '../http/keys/index.js';

/**
 * The OAuth resource server's settings (`GatewayOptions.oauth`): {@link OAuthOptions} with `audience` optional
 * (default: the public URL's `/mcp`, the canonical MCP URL clients ask tokens for).
 */
export type GatewayOAuthOptions = Omit<OAuthOptions, 'audience' | 'clock'> & { audience?: string };

/** What the front door is built from (options first, then the environment). */
export interface GatewayAuthInput {
  /** The interface the gateway listens on. */
  host: string;
  adminToken: string | undefined;
  /** The gateway's API keys (verified at the edge, managed at `/admin/api/keys`). */
  apiKeys: ApiKeys;
  /** Keys active at startup: any makes the mode `credentials`. */
  activeKeys: number;
  /** `--insecure-no-auth`: serve anyone without a credential (default false). */
  insecureNoAuth: boolean | undefined;
  /** The gateway's public URL (the default OAuth audience is its `/mcp`). */
  publicUrl: string;
  /** OAuth settings; default from `BREAKWATER_OAUTH_ISSUER` (and `_AUDIENCE`, `_JWKS_URL`). */
  oauth: GatewayOAuthOptions | undefined;
  /** The gateway's clock: the OAuth verifier checks `exp`/`nbf` and times its key refreshes on it. */
  clock: Clock;
  allowedHosts: readonly string[] | undefined;
  allowedOrigins: readonly string[] | undefined;
  trustedProxies: readonly string[] | undefined;
  env: NodeJS.ProcessEnv;
}

/** The front door of one gateway. */
export interface GatewayAuth {
  readonly mode: AuthMode;
  readonly authenticator: Authenticator;
  /** The OAuth verifier, when an issuer is configured (its metadata routes must be mounted). */
  readonly oauth: OAuthVerifier | undefined;
  readonly allowedHosts: readonly string[];
  readonly allowedOrigins: readonly string[];
  readonly trustedProxies: readonly string[];
  /** One line for the start banner: who may call. */
  readonly summary: string;
}

/**
 * Decides the auth mode and builds the credential check: `insecure` when asked; `credentials` when any
 * credential is configured (the admin token, an active API key, an OAuth issuer); else `loopback`. Keys are
 * verified in every mode, so a key created while a loopback gateway runs works at once from anywhere; the
 * mode itself (who may call without one) changes only at the next start.
 * @throws Error (`code: 'ERR_BREAKWATER_NO_AUTH'`) when the gateway would listen on a non-loopback interface
 *   in loopback mode: without a credential it would serve nobody there, and a proxy in front would make
 *   everyone look local. Pass `insecureNoAuth` (`--insecure-no-auth`) to serve anyone on purpose.
 */
export function gatewayAuth(input: GatewayAuthInput): GatewayAuth {
  const list = (option: readonly string[] | undefined, variable: string): readonly string[] =>
    option ??
    (input.env[variable] ?? '')
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry !== '');
  const oauthOptions = input.oauth ?? oauthFromEnv(input.env);
  const oauth =
    oauthOptions === undefined
      ? undefined
      : createOAuthVerifier({
          ...oauthOptions,
          audience: oauthOptions.audience ?? `${input.publicUrl}/mcp`,
          clock: input.clock,
        });
  const configured = input.adminToken !== undefined || oauth !== undefined || input.activeKeys > 0;
  const mode: AuthMode = input.insecureNoAuth === true ? 'insecure' : configured ? 'credentials' : 'loopback';
  if (mode === 'loopback' && !listensOnLoopbackOnly(input.host)) {
    const error = new Error(
      `refusing to listen on ${input.host} without credentials: configure one (BREAKWATER_ADMIN_TOKEN, an API key from 'breakwater keys create') or pass --insecure-no-auth to serve anyone (docs/security.md)`,
    );
    (error as Error & { code: string }).code = 'ERR_BREAKWATER_NO_AUTH';
    throw error;
  }
  const authenticator = createAuthenticator({
    mode,
    adminToken: input.adminToken,
    apiKeys: input.apiKeys,
    oauth,
  });
  return {
    mode,
    authenticator,
    oauth,
    allowedHosts: list(input.allowedHosts, 'BREAKWATER_ALLOWED_HOSTS'),
    allowedOrigins: list(input.allowedOrigins, 'BREAKWATER_ALLOWED_ORIGINS'),
    trustedProxies: list(input.trustedProxies, 'BREAKWATER_TRUSTED_PROXIES'),
    summary: SUMMARIES[mode],
  };
}

const SUMMARIES: Record<AuthMode, string> = {
  loopback:
    'this machine only: no credentials configured (create an API key with `breakwater keys create`; docs/security.md)',
  credentials: 'credentials required (API keys, OAuth access tokens, the admin token)',
  insecure: 'ANYONE may call: --insecure-no-auth is set',
};

/** True when `host` is a loopback interface (a wildcard such as `0.0.0.0` or `::` is not). */
function listensOnLoopbackOnly(host: string): boolean {
  const name = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host.toLowerCase();
  return isLoopbackName(name);
}

/** OAuth settings from `BREAKWATER_OAUTH_ISSUER`, `BREAKWATER_OAUTH_AUDIENCE`, `BREAKWATER_OAUTH_JWKS_URL`. */
function oauthFromEnv(env: NodeJS.ProcessEnv): GatewayOAuthOptions | undefined {
  const issuer = env.BREAKWATER_OAUTH_ISSUER?.trim();
  if (issuer === undefined || issuer === '') return undefined;
  const audience = env.BREAKWATER_OAUTH_AUDIENCE?.trim();
  const jwksUrl = env.BREAKWATER_OAUTH_JWKS_URL?.trim();
  return {
    issuer,
    ...(audience === undefined || audience === '' ? {} : { audience }),
    ...(jwksUrl === undefined || jwksUrl === '' ? {} : { jwksUrl }),
  };
}
