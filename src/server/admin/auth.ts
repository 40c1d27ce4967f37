/**
 * Admin authentication (issue 8, "Dashboard"): the one check in front of every admin route — the dashboard
 * page, its JSON API (`/admin/api/…`), `/admin/webhooks…` and `/admin/ai/routes…`.
 *
 * - **Token mode** (`token` set, from `BREAKWATER_ADMIN_TOKEN`): a request needs `Authorization: Bearer
 *   <token>` (or `x-api-key: <token>`, as the edge reads credentials) or the session cookie that `POST /admin/login` sets after checking the token. Both compares are
 *   constant-time. The cookie is `HttpOnly; SameSite=Strict; Path=/` (and `Secure` over HTTPS) and holds no
 *   secret: `<expiresAtMs>.<HMAC-SHA-256 of it keyed by the token>`, so it survives a restart, is accepted by
 *   every instance with the same token, and a new token ends every session.
 * - **Loopback mode** (no token): only clients on this machine are answered (403 otherwise), and only when
 *   the `Host` header names this machine too (`localhost`, `127.x.x.x`, `[::1]`): a page from elsewhere that
 *   rebinds its DNS name to 127.0.0.1 is refused. A request carrying any proxy header (`X-Forwarded-For`,
 *   `Forwarded`, `X-Real-IP`, `Via`, …: http/proxy.ts) came through a proxy, which may well run on this
 *   machine, and is refused too.
 * - Wrong tokens are counted per client address ({@link LoginThrottle}): past the limit, every token that
 *   address presents is refused with 429 for a while.
 *
 * Cross-site requests: a state-changing request (any method but GET, HEAD, OPTIONS) whose `Sec-Fetch-Site` is
 * `cross-site`/`same-site`, or whose `Origin` is not the `Host` it was sent to, is refused (403) in both modes;
 * one authenticated by the cookie must also carry `x-breakwater-admin: 1` (the page sets it; a cross-site
 * form cannot, and a cross-site `fetch` with it needs a CORS preflight that is never granted). Bearer requests
 * need no such header: the browser never adds a bearer token on its own.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  BreakwaterError,
  clockOption,
  finite,
  invalidOption,
  POSITIVE,
  type Clock,
} from '../../core/index.js';
import {
  isLocalClient,
  isLoopbackAddress,
  isLoopbackName,
  isSafeMethod,
  parseHost,
  presentedCredential,
} from '../../http/index.js';
import { createLoginThrottle, type LoginThrottle } from './throttle.js';

/** Options of {@link createAdminAuth}; validated at once (a RangeError names the option). */
export interface AdminAuthOptions {
  /**
   * The admin token (the gateway reads `BREAKWATER_ADMIN_TOKEN`): at least 16 characters, no whitespace.
   * Unset or empty: loopback mode.
   */
  token?: string;
  /** How long a login session lasts, ms (default 43 200 000: 12 h). */
  sessionTtlMs?: number;
  /** Counts wrong tokens per client address (default {@link createLoginThrottle} with its defaults). */
  throttle?: LoginThrottle;
  clock?: Clock;
}

/** Defaults and names of {@link createAdminAuth}. */
export const ADMIN_AUTH_DEFAULTS = {
  sessionTtlMs: 12 * 60 * 60_000,
  cookieName: 'breakwater_admin',
  /** The header the dashboard sets on its state-changing requests (value `1`). */
  csrfHeader: 'x-breakwater-admin',
  minTokenLength: 16,
} as const;

/** How a request was let in. */
export type AdminAccess = 'bearer' | 'session' | 'loopback';

/** The admin check of a gateway. */
export interface AdminAuth {
  /** `token` when a token is configured, else `loopback`. */
  readonly mode: 'token' | 'loopback';
  /**
   * Checks one request and says how it was let in.
   * @throws BreakwaterError `unauthorized`: 401 (token mode: no credentials or a wrong token; the reply gets
   *   `WWW-Authenticate: Bearer` when `reply` is given), 403 (loopback mode: not this machine or proxied; a cross-site
   *   write; a cookie-authenticated write without `x-breakwater-admin`).
   */
  check(request: FastifyRequest, reply?: FastifyReply): AdminAccess;
  /** {@link check} as a Fastify `onRequest` hook. */
  readonly hook: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  /** True when `candidate` is the token (constant-time); always false in loopback mode. */
  verifyToken(candidate: unknown): boolean;
  /** A fresh session cookie's `Set-Cookie` value (token mode only). @throws Error in loopback mode. */
  sessionCookie(secure: boolean): string;
  /** The `Set-Cookie` value that ends a session. */
  clearCookie(secure: boolean): string;
  /** The throttle of wrong tokens (the login route counts its failures in it too). */
  readonly throttle: LoginThrottle;
}

/**
 * Creates the admin check.
 * @throws RangeError naming `token` (shorter than 16 characters, or with whitespace) or `sessionTtlMs`.
 */
export function createAdminAuth(options: AdminAuthOptions = {}): AdminAuth {
  const owner = 'createAdminAuth';
  const token = options.token === undefined || options.token === '' ? undefined : options.token;
  if (
    token !== undefined &&
    (typeof token !== 'string' || token.length < ADMIN_AUTH_DEFAULTS.minTokenLength || /\s/.test(token))
  ) {
    // The value itself never goes into the message.
    throw invalidOption(
      owner,
      'token',
      `a string of at least ${ADMIN_AUTH_DEFAULTS.minTokenLength} characters without whitespace (BREAKWATER_ADMIN_TOKEN)`,
      typeof token === 'string' ? `${token.length} characters` : typeof token,
    );
  }
  const ttlMs = finite(
    owner,
    'sessionTtlMs',
    options.sessionTtlMs ?? ADMIN_AUTH_DEFAULTS.sessionTtlMs,
    POSITIVE,
  );
  const clock = clockOption(owner, options.clock);
  const throttle = options.throttle ?? createLoginThrottle({ clock });
  const tokenDigest = token === undefined ? undefined : digest(token);

  const verifyToken = (candidate: unknown): boolean =>
    tokenDigest !== undefined &&
    typeof candidate === 'string' &&
    // Both sides hashed first: equal lengths for timingSafeEqual, and no length leak.
    timingSafeEqual(digest(candidate), tokenDigest);

  const sign = (expiresAt: number): string =>
    createHmac('sha256', token!).update(`breakwater-admin-session:${expiresAt}`).digest('base64url');

  const validSession = (value: string | undefined): boolean => {
    if (token === undefined || value === undefined) return false;
    const dot = value.indexOf('.');
    const expiresAt = Number(value.slice(0, dot));
    if (dot < 1 || !Number.isSafeInteger(expiresAt) || expiresAt <= clock.now()) return false;
    const given = Buffer.from(value.slice(dot + 1));
    const expected = Buffer.from(sign(expiresAt));
    return given.length === expected.length && timingSafeEqual(given, expected);
  };

  const check = (request: FastifyRequest, reply?: FastifyReply): AdminAccess => {
    // TRACE is safe but never a page's request: treated as a write, as before.
    const write = !isSafeMethod(request.method) || request.method.toUpperCase() === 'TRACE';
    if (write) refuseCrossSite(request);
    if (token === undefined) {
      if (!isLoopbackAddress(request.socket.remoteAddress)) {
        throw forbidden(
          'The admin API and dashboard answer only to clients on this machine (loopback); set BREAKWATER_ADMIN_TOKEN to open them to others.',
          'not_loopback',
        );
      }
      // A proxy on this machine makes every client look local; what it forwarded is not from here.
      if (!isLocalClient(request)) {
        throw forbidden(
          'Without BREAKWATER_ADMIN_TOKEN the admin API answers only clients on this machine, not requests forwarded by a proxy; set BREAKWATER_ADMIN_TOKEN.',
          'forwarded',
        );
      }
      if (!isLoopbackHost(request.headers.host)) {
        throw forbidden(
          'Without BREAKWATER_ADMIN_TOKEN the admin API answers only requests addressed to this machine (Host localhost, 127.0.0.1 or [::1]).',
          'host_not_loopback',
        );
      }
      return 'loopback';
    }
    const presented = adminCredential(request);
    if (presented !== undefined) {
      throttle.refuseIfBlocked(request.ip);
      if (verifyToken(presented)) return 'bearer';
      throttle.recordFailure(request.ip);
      throw unauthorized(reply, 'The admin token is wrong.', 'invalid_token');
    }
    if (validSession(readCookie(request.headers.cookie, ADMIN_AUTH_DEFAULTS.cookieName))) {
      if (write && request.headers[ADMIN_AUTH_DEFAULTS.csrfHeader] !== '1') {
        throw forbidden(
          `A change made with the session cookie must carry the header ${ADMIN_AUTH_DEFAULTS.csrfHeader}: 1 (the dashboard sends it).`,
          'csrf_header_missing',
        );
      }
      return 'session';
    }
    throw unauthorized(
      reply,
      'The admin API needs the admin token: send Authorization: Bearer <token>, or log in at /admin/login.',
      'credentials_missing',
    );
  };

  return {
    mode: token === undefined ? 'loopback' : 'token',
    check,
    hook: async (request, reply) => {
      check(request, reply);
    },
    verifyToken,
    sessionCookie(secure) {
      if (token === undefined)
        throw new Error('createAdminAuth: no token is configured, so there are no sessions');
      const expiresAt = clock.now() + ttlMs;
      return cookie(`${expiresAt}.${sign(expiresAt)}`, Math.floor(ttlMs / 1000), secure);
    },
    clearCookie: (secure) => cookie('', 0, secure),
    throttle,
  };
}

function cookie(value: string, maxAgeS: number, secure: boolean): string {
  return `${ADMIN_AUTH_DEFAULTS.cookieName}=${value}; Path=/; Max-Age=${maxAgeS}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** A cookie's value from a `Cookie` header, or undefined. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * 403 for a write sent from another site: Fetch Metadata (`Sec-Fetch-Site: cross-site | same-site`), else an
 * `Origin` whose host is not the request's `Host`. Requests without either (curl, API clients) pass.
 * @throws BreakwaterError `unauthorized` (403, `details.reason: 'cross_site'`).
 */
export function refuseCrossSite(request: FastifyRequest): void {
  const site = request.headers['sec-fetch-site'];
  const origin = request.headers.origin;
  let crossSite = site === 'cross-site' || site === 'same-site';
  if (!crossSite && typeof origin === 'string' && origin !== '') {
    let same = false;
    try {
      // Both sides parsed alike, so a default port (`:80` in Host, absent in Origin) compares equal.
      const from = new URL(origin);
      same = new URL(`${from.protocol}//${request.headers.host ?? ''}`).host === from.host;
    } catch {
      same = false; // `Origin: null` (a sandboxed or file page) or garbage
    }
    crossSite = !same;
  }
  if (crossSite) {
    throw forbidden(
      'Admin changes are accepted only from the gateway’s own pages or API clients.',
      'cross_site',
    );
  }
}

/**
 * The token a request presents as the edge reads every credential (`Authorization: Bearer <token>`, or
 * `x-api-key: <token>`: http's `presentedCredential`), or undefined; `''`, never the token, for a malformed
 * one (another scheme, two different values), so that it is refused and counted as a wrong token.
 */
function adminCredential(request: FastifyRequest): string | undefined {
  try {
    return presentedCredential(request);
  } catch {
    return '';
  }
}

function forbidden(message: string, reason: string): BreakwaterError {
  return new BreakwaterError('unauthorized', { status: 403, message, details: { reason } });
}

function unauthorized(reply: FastifyReply | undefined, message: string, reason: string): BreakwaterError {
  void reply?.header('www-authenticate', 'Bearer realm="breakwater-admin"');
  return new BreakwaterError('unauthorized', { status: 401, message, details: { reason } });
}

/**
 * True when a `Host` header names this machine: `localhost` (and `*.localhost`), `127.x.x.x`, `[::1]`, as a
 * whole `host[:port]` (so `[::1]evil.example` is not).
 */
export function isLoopbackHost(host: string | undefined): boolean {
  const parsed = host === undefined ? undefined : parseHost(host);
  return parsed !== undefined && isLoopbackName(parsed.name);
}

export { isLoopbackAddress };
