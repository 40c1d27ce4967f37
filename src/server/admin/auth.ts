/**
 * Admin authentication (docs/security.md#admin): the one check in front of every admin route — the dashboard
 * page, its JSON API (`/admin/api/…`), `/admin/webhooks…` and `/admin/ai/routes…`.
 *
 * - **Token mode** (`token` set, from `BREAKWATER_ADMIN_TOKEN`): a request needs `Authorization: Bearer
 *   <token>` (or `x-api-key: <token>`, as the edge reads credentials; compared in constant time) or the session cookie that `POST /admin/login` sets after checking
 *   the token. The cookie is `HttpOnly; SameSite=Strict; Path=/` (and `Secure` when the request came over
 *   TLS, directly or through a trusted proxy) and holds a random session id kept server-side
 *   (sessions.ts): each cookie request reads its row, `POST /admin/logout` revokes it, so a copied cookie
 *   stops working at logout; a new token ends every session.
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
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { BreakwaterError, defineOptions, invalidOption, o, Schema, type Clock } from '../../core/index.js';
import {
  isLocalClient,
  isLoopbackAddress,
  isLoopbackName,
  isSafeMethod,
  parseHost,
  presentedCredential,
  viaTls,
} from '../../http/index.js';
import type { AdminSessionStore } from '../../store/index.js';
import { ADMIN_SESSION_DEFAULTS, createAdminSessions, type AdminSessions } from './sessions.js';
import { createLoginThrottle, type LoginThrottle } from './throttle.js';

/** Options of {@link createAdminAuth}; validated at once (an OptionsError names every bad option). */
export interface AdminAuthOptions {
  /**
   * The admin token (the gateway reads `BREAKWATER_ADMIN_TOKEN`): at least 16 characters, no whitespace.
   * Unset or empty: loopback mode.
   */
  token?: string;
  /**
   * Where the dashboard's sessions are kept (`store.sessions`): required with a `token`, unused without.
   */
  sessions?: AdminSessionStore;
  /** How long a login session lasts, ms (finite, > 0, default 43 200 000: 12 h). */
  sessionTtlMs?: number;
  /**
   * Live sessions at once (integer >= 1, default 100, {@link ADMIN_SESSION_DEFAULTS}): a login beyond them revokes the
   * oldest.
   */
  maxSessions?: number;
  /** Counts wrong tokens per client address (default {@link createLoginThrottle} with its defaults). */
  throttle?: LoginThrottle;
  clock?: Clock;
}

/** Defaults and names of {@link createAdminAuth}. */
export const ADMIN_AUTH_DEFAULTS = {
  sessionTtlMs: 12 * 60 * 60_000,
  maxSessions: ADMIN_SESSION_DEFAULTS.maxSessions,
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
   * Checks one request and says how it was let in; a session cookie is checked against its stored session
   * (one store read).
   * @throws BreakwaterError `unauthorized`: 401 (token mode: no credentials, a wrong token, or a session
   *   cookie whose session is unknown, revoked or expired, `reason` `session_unknown` / `session_revoked` /
   *   `session_expired`; the reply gets `WWW-Authenticate: Bearer` when `reply` is given), 403 (loopback
   *   mode: not this machine or proxied; a cross-site write; a cookie-authenticated write without
   *   `x-breakwater-admin`); 429 `rate_limited` (`login_throttled`); `upstream_unavailable` (503) when the
   *   session store failed.
   */
  check(request: FastifyRequest, reply?: FastifyReply): Promise<AdminAccess>;
  /** {@link check} as a Fastify `onRequest` hook. */
  readonly hook: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  /** True when `candidate` is the token (constant-time); always false in loopback mode. */
  verifyToken(candidate: unknown): boolean;
  /**
   * Opens a session for a login whose token was verified, recording the client's address, and resolves the
   * `Set-Cookie` value that carries it (`Secure` when `request` came over TLS, directly or through a trusted
   * proxy).
   * @throws Error in loopback mode; BreakwaterError `upstream_unavailable` (503) when the store failed.
   */
  openSession(request: FastifyRequest): Promise<string>;
  /**
   * Revokes the session of the request's cookie; resolves true when a live session ended now, false when
   * there was none (no cookie, loopback mode, or a session already ended).
   * @throws BreakwaterError `upstream_unavailable` (503) when the store failed.
   */
  closeSession(request: FastifyRequest): Promise<boolean>;
  /** The `Set-Cookie` value that removes the cookie from the browser. */
  clearCookie(secure: boolean): string;
  /** The throttle of wrong tokens (the login route counts its failures in it too). */
  readonly throttle: LoginThrottle;
}

const TOKEN_RULE = `a string of at least ${ADMIN_AUTH_DEFAULTS.minTokenLength} characters without whitespace (BREAKWATER_ADMIN_TOKEN)`;

const isAdminToken = (token: unknown): token is string =>
  typeof token === 'string' && token.length >= ADMIN_AUTH_DEFAULTS.minTokenLength && !/\s/.test(token);

/** What a refused token is shown as: its length or its type, never the value itself. */
const tokenShown = (token: unknown): string =>
  typeof token === 'string' ? `${token.length} characters` : typeof token;

/**
 * The admin token option checked: undefined for none (unset or empty).
 * @throws OptionsError naming `owner` and `token` (not a string, shorter than 16 characters, or with
 *   whitespace); the value itself is never in the message.
 */
export function adminTokenOption(owner: string, token: unknown): string | undefined {
  if (token === undefined || token === '') return undefined;
  if (!isAdminToken(token)) throw invalidOption(owner, 'token', TOKEN_RULE, tokenShown(token));
  return token;
}

/** The `token` option as {@link adminTokenOption} checks it, in a schema: every problem reported at once. */
const tokenSchema = new Schema<string | undefined, string | undefined>((token, option, problems) => {
  if (token === undefined || token === '') return undefined;
  if (!isAdminToken(token)) problems.push({ option, rule: TOKEN_RULE, value: tokenShown(token) });
  return token as string;
});

/** Checks {@link AdminAuthOptions} and applies {@link ADMIN_AUTH_DEFAULTS}. */
const parseOptions = defineOptions<AdminAuthOptions>()(
  'createAdminAuth',
  {
    token: tokenSchema,
    // Its methods are the store's contract (store/); required with a token (the check below).
    sessions: o.any<AdminSessionStore | undefined>(),
    sessionTtlMs: o.number().positive().default(ADMIN_AUTH_DEFAULTS.sessionTtlMs),
    maxSessions: o
      .number()
      .int()
      .min(1)
      .refine(Number.isSafeInteger, 'an integer >= 1')
      .default(ADMIN_AUTH_DEFAULTS.maxSessions),
    throttle: o
      .methods<LoginThrottle>('a LoginThrottle (createLoginThrottle)', 'refuseIfBlocked', 'recordFailure')
      .optional(),
    clock: o.clock(),
  },
  ({ token, sessions }, report) => {
    if (token !== undefined && sessions === undefined)
      report('sessions', 'a session store (store.sessions) when a token is set', sessions);
  },
);

/**
 * Creates the admin check.
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `createAdminAuth`) naming every bad option:
 *   `token` (shorter than 16 characters, or with whitespace), `sessions` (missing with a token),
 *   `sessionTtlMs` (not > 0), `maxSessions` (not an integer >= 1), `throttle`, `clock`.
 */
export function createAdminAuth(options: AdminAuthOptions = {}): AdminAuth {
  const parsed = parseOptions(options);
  const { token, sessions: store, sessionTtlMs: ttlMs, maxSessions, clock } = parsed;
  const throttle = parsed.throttle ?? createLoginThrottle({ clock });
  const tokenDigest = token === undefined ? undefined : digest(token);
  // A token comes with a session store: the parser refuses one without.
  const sessions: AdminSessions | undefined =
    token === undefined
      ? undefined
      : createAdminSessions({ store: store!, token, ttlMs, maxSessions, clock });

  const verifyToken = (candidate: unknown): boolean =>
    tokenDigest !== undefined &&
    typeof candidate === 'string' &&
    // Both sides hashed first: equal lengths for timingSafeEqual, and no length leak.
    timingSafeEqual(digest(candidate), tokenDigest);

  const sessionCookieOf = (request: FastifyRequest): string | undefined =>
    readCookie(request.headers.cookie, ADMIN_AUTH_DEFAULTS.cookieName);

  const check = async (request: FastifyRequest, reply?: FastifyReply): Promise<AdminAccess> => {
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
    const sessionId = sessionCookieOf(request);
    if (sessions !== undefined && sessionId !== undefined && sessionId !== '') {
      try {
        await sessions.verify(sessionId);
      } catch (error) {
        if (error instanceof BreakwaterError && error.status === 401) challenge(reply);
        throw error;
      }
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
      await check(request, reply);
    },
    verifyToken,
    async openSession(request) {
      if (sessions === undefined)
        throw new Error('createAdminAuth: no token is configured, so there are no sessions');
      const opened = await sessions.open(request.ip);
      return cookie(opened.id, Math.floor(ttlMs / 1000), viaTls(request));
    },
    async closeSession(request) {
      const id = sessionCookieOf(request);
      if (sessions === undefined || id === undefined || id === '') return false;
      return sessions.revoke(id);
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
  challenge(reply);
  return new BreakwaterError('unauthorized', { status: 401, message, details: { reason } });
}

/** The challenge of every admin 401 (RFC 9110, section 11.6.1). */
function challenge(reply: FastifyReply | undefined): void {
  void reply?.header('www-authenticate', 'Bearer realm="breakwater-admin"');
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
