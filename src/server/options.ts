import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { defineOptions, LogContext, o, REDACTED, redactText, type Clock } from '../core/index.js';
import type { Authenticator } from '../http/index.js';
import { trustedProxyList } from '../http/index.js';
import type { Jobs } from '../jobs/index.js';
import type { JobStore } from '../store/index.js';

/**
 * What the server reads from the job store: `get` for the readiness probe, `events` for a job's last
 * progress. Any {@link JobStore} (SQLite or PostgreSQL) fits; pass the one the jobs runtime uses.
 */
export type ServerStore = Pick<JobStore, 'get' | 'events'>;

/**
 * A breaker as `/readyz` lists it. `CircuitBreakerPolicy.state()` (policy/) has this shape, so
 * `() => breakers.map((b) => b.state())` is enough. Times are ms since the epoch.
 */
export interface BreakerSummary {
  readonly name: string;
  /** `closed`, `open`, `half-open` or `isolated`; every state but `closed` is listed. */
  readonly state: string;
  readonly openedAt?: number | null;
  readonly retryAfterMs?: number | null;
}

/**
 * Mounts routes on the server (the MCP endpoint, webhooks, the dashboard, …). Each one is registered as its
 * own encapsulated Fastify plugin, so its hooks, decorators and content-type parsers stay inside it, while the
 * server's problem+json error handling, timeout and shutdown apply to its routes too.
 */
export type ServerRoutes = (app: FastifyInstance) => void | Promise<void>;

/** Fastify's pino options (`level`, `stream`, `redact`, `serializers`, …). */
export type ServerLoggerOptions = Exclude<NonNullable<FastifyServerOptions['logger']>, boolean>;

/** Options of {@link createServer}; validated at construction (an OptionsError names every bad option). */
export interface ServerOptions {
  /** The jobs runtime behind `/jobs`. Required. */
  jobs: Jobs;
  /** The job store, for `/readyz` and a job's last progress. Required. */
  store: ServerStore;
  /**
   * The readiness probe of `/readyz`: resolves when the store is reachable, rejects when it is not. Default:
   * one indexed read (`store.get` of an id that does not exist). A probe that takes longer than
   * `readyTimeoutMs` counts as unreachable.
   */
  ready?: () => Promise<unknown>;
  /** Most ms `/readyz` waits for the probe (integer >= 1, default 2 000). */
  readyTimeoutMs?: number;
  /**
   * The origin (and optional base path) clients reach the server at, e.g. `https://gw.example.com`: job
   * views carry absolute `status_url`/`events_url` under it. Default: none, and the URLs are absolute paths
   * (`/jobs/<id>`). Must be an `http:` or `https:` URL without query or fragment.
   */
  publicUrl?: string;
  /**
   * Logging through Fastify's pino: `false` (default: silent, for library use), `true` (level `info`), or
   * pino options. The {@link REDACTED_HEADERS} (credentials, cookies, API keys, webhook signatures) and the
   * {@link REDACTED_FIELDS} of a line and of its objects one level down are always redacted as `[redacted]`
   * (your `redact` paths are added to them, your `censor` replaces `[redacted]`); the
   * {@link MASKED_TEXT_PATHS} (the request URL, a logged error's message and stack) are always masked with
   * core's `redactText` (secret query parameters, API keys, JWTs, bearer tokens). Every line written inside a `LogContext` (a tool call, a job's
   * run, an operation) carries its fields (`correlation_id`, `tool`, `job_id`, `operation_id`) through a pino
   * `mixin` (yours, if given, still runs; its fields win).
   */
  logger?: boolean | ServerLoggerOptions;
  /**
   * Inbound request timeout in ms (integer >= 1, default 35 000: the 30 s hard maximum of a tool call
   * deadline plus 5 s for the answer to be written). A route that has not answered by then gets a 504
   * problem+json and its `requestSignal(request)` aborts; SSE streams (hijacked replies) are exempt. It also bounds
   * how long a client may take to send its request (Node's `requestTimeout`, answered 408).
   */
  requestTimeoutMs?: number;
  /** Largest request body in bytes (integer >= 1, default 1 048 576); a larger one gets 413. */
  bodyLimitBytes?: number;
  /** The breakers `/readyz` lists (those not `closed`). Default: none. */
  breakers?: () => readonly BreakerSummary[];
  /** Extra routes, registered in order after the built-in ones (see {@link ServerRoutes}). */
  routes?: readonly ServerRoutes[];
  /** Ms of silence after which an SSE stream gets a `: keep-alive` comment line (integer >= 1, default 15 000). */
  keepAliveMs?: number;
  /**
   * Most bytes an SSE stream may have queued for a slow client (integer >= 1, default 1 048 576); past it the
   * stream is dropped and the client resumes with `Last-Event-ID`, instead of the server buffering without end.
   */
  maxStreamBufferBytes?: number;
  /**
   * Most SSE streams (`GET /jobs/:id/events`) one principal may hold open at once (integer >= 1, default 16);
   * past it 429 `rate_limited` with `Retry-After`, so one caller cannot take every stream.
   */
  maxStreamsPerPrincipal?: number;
  /** Most SSE streams open at once on the server (integer >= 1, default 4 096); past it 503 `overloaded`. */
  maxStreams?: number;
  /** How long {@link closeGracefully} waits for in-flight requests by default (ms, integer >= 0, default 10 000). */
  shutdownGraceMs?: number;
  /** Source of time for keep-alives, the readiness timeout and the shutdown grace (default the system clock). */
  clock?: Clock;
  /**
   * Who may call (docs/security.md): the credential check of every route (`createAuthenticator`). Default:
   * loopback mode with no credential: clients on this machine only, each the `local` principal.
   */
  authenticator?: Authenticator;
  /**
   * Host names answered besides IP literals, loopback names and `publicUrl`'s host; any other `Host` gets 403
   * (DNS rebinding). Default none.
   */
  allowedHosts?: readonly string[];
  /** Browser origins accepted besides loopback pages and the gateway's own (`https://app.example.com`). */
  allowedOrigins?: readonly string[];
  /**
   * Proxies whose `X-Forwarded-For`/`X-Forwarded-Proto` are believed: IP addresses or CIDR ranges (Fastify's
   * `trustProxy`). Default none: forwarding headers are ignored, and mark a request as not local.
   */
  trustedProxies?: readonly string[];
}

/** Defaults of {@link ServerOptions}. */
export const SERVER_DEFAULTS = {
  readyTimeoutMs: 2_000,
  requestTimeoutMs: 35_000,
  bodyLimitBytes: 1_048_576,
  keepAliveMs: 15_000,
  maxStreamBufferBytes: 1_048_576,
  maxStreamsPerPrincipal: 16,
  maxStreams: 4_096,
  shutdownGraceMs: 10_000,
} as const;

/** Headers whose values never reach a log line (pino `redact` paths are added for each). */
export const REDACTED_HEADERS = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
  'idempotency-key',
  // Webhook signatures: Stripe, Standard Webhooks, GitHub (both), the generic HMAC verifier's default.
  'stripe-signature',
  'webhook-signature',
  'x-hub-signature',
  'x-hub-signature-256',
  'x-signature',
  // AI providers' keys besides `authorization` and `x-api-key`: Azure OpenAI, Google.
  'api-key',
  'x-goog-api-key',
] as const;

/**
 * Field names whose values never reach a log line, at the top of a line or one object down (`err.token`,
 * `config.apiKey`): credentials some code may log as plain fields. Free text is masked where it is logged
 * (core's `errorFields`, with the audit log's rules).
 */
export const REDACTED_FIELDS = [
  'authorization',
  'cookie',
  'password',
  'secret',
  'token',
  'apiKey',
  'api_key',
  'signature',
] as const;

/**
 * Text fields of a log line masked by core's `redactText` rather than replaced: the request's URL (pino's
 * `req.url`: a secret query parameter such as `?api_key=…`, `?token=…`, `?code=…` or `?key=…`, and any value
 * that looks like an API key, a JWT or `Bearer …`, becomes `[redacted]`) and a logged error's message and stack
 * (`err.message`, `err.stack`, causes included), which may quote a URL or a credential they were given.
 */
export const MASKED_TEXT_PATHS = ['req.url', 'err.message', 'err.stack'] as const;

const MASKED_TEXT: ReadonlySet<string> = new Set(MASKED_TEXT_PATHS);

type Censor = (value: unknown, path: readonly unknown[]) => unknown;

/** Whether a redacted path (pino gives its keys, symbols included) is one of {@link MASKED_TEXT_PATHS}. */
function isMaskedText(path: readonly unknown[]): boolean {
  const [top, field] = path;
  return path.length === 2 && typeof top === 'string' && MASKED_TEXT.has(`${top}.${String(field)}`);
}

/** {@link ServerOptions} with defaults applied. */
export interface ResolvedServerOptions {
  jobs: Jobs;
  store: ServerStore;
  ready: () => Promise<unknown>;
  readyTimeoutMs: number;
  publicUrl: string | undefined;
  logger: false | ServerLoggerOptions;
  requestTimeoutMs: number;
  bodyLimitBytes: number;
  breakers: () => readonly BreakerSummary[];
  routes: readonly ServerRoutes[];
  keepAliveMs: number;
  maxStreamBufferBytes: number;
  maxStreamsPerPrincipal: number;
  maxStreams: number;
  shutdownGraceMs: number;
  clock: Clock;
  authenticator: Authenticator | undefined;
  allowedHosts: readonly string[];
  allowedOrigins: readonly string[];
  trustedProxies: string[];
}

/** An id no job can have (job ids are `job_` + UUIDv7), so the default probe is a miss on the primary key. */
const PROBE_ID = 'job_readiness-probe';

const isString = (v: unknown): v is string => typeof v === 'string';
const isPlainObject = (v: unknown): boolean => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An optional list of strings, default empty. */
const stringList = () =>
  o
    .custom<readonly string[]>((v) => Array.isArray(v) && v.every(isString), 'an array of strings')
    .default([]);

/** Checks {@link ServerOptions} and applies {@link SERVER_DEFAULTS}. */
const parseOptions = defineOptions<ServerOptions>()('createServer', {
  jobs: o.methods<Jobs>('a Jobs runtime (createJobs)', 'get'),
  store: o.methods<ServerStore>('a job store with get() and events()', 'get', 'events'),
  ready: o.fn<() => Promise<unknown>>().optional(),
  readyTimeoutMs: o.number().int().min(1).default(SERVER_DEFAULTS.readyTimeoutMs),
  publicUrl: o.custom<string>(isPublicUrl, 'an http(s) URL without query or fragment').optional(),
  logger: o
    .custom<boolean | ServerLoggerOptions>(
      (v) => typeof v === 'boolean' || isPlainObject(v),
      'a boolean or pino options',
    )
    .optional(),
  requestTimeoutMs: o.number().int().min(1).default(SERVER_DEFAULTS.requestTimeoutMs),
  bodyLimitBytes: o.number().int().min(1).default(SERVER_DEFAULTS.bodyLimitBytes),
  breakers: o.fn<() => readonly BreakerSummary[]>().optional(),
  routes: o
    .custom<readonly ServerRoutes[]>(
      (v) => Array.isArray(v) && v.every((r) => typeof r === 'function'),
      'an array of functions (app) => void',
    )
    .default([]),
  keepAliveMs: o.number().int().min(1).default(SERVER_DEFAULTS.keepAliveMs),
  maxStreamBufferBytes: o.number().int().min(1).default(SERVER_DEFAULTS.maxStreamBufferBytes),
  maxStreamsPerPrincipal: o.number().int().min(1).default(SERVER_DEFAULTS.maxStreamsPerPrincipal),
  maxStreams: o.number().int().min(1).default(SERVER_DEFAULTS.maxStreams),
  shutdownGraceMs: o.number().int().min(0).default(SERVER_DEFAULTS.shutdownGraceMs),
  clock: o.clock(),
  // Checked where it is used (http/'s createAuthenticator makes it).
  authenticator: o.any<Authenticator | undefined>(),
  allowedHosts: stringList(),
  allowedOrigins: stringList(),
  trustedProxies: stringList(),
});

/**
 * Validates {@link ServerOptions} and fills in defaults.
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `createServer`) naming every bad option;
 *   RangeError from http/'s `trustedProxyList` for a `trustedProxies` entry that is not an address or CIDR.
 */
export function resolveServerOptions(options: ServerOptions): ResolvedServerOptions {
  const p = parseOptions(options);
  const store = p.store;
  return {
    ...p,
    ready: p.ready ?? (() => store.get(PROBE_ID)),
    // One form for joining: no trailing slash, so `${publicUrl}/jobs/…` never doubles it.
    publicUrl: p.publicUrl === undefined ? undefined : new URL(p.publicUrl).href.replace(/\/+$/, ''),
    logger: resolveLogger(p.logger),
    breakers: p.breakers ?? (() => []),
    trustedProxies: trustedProxyList(p.trustedProxies),
  };
}

/** An `http:` or `https:` URL without query or fragment. */
function isPublicUrl(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.search === '' && url.hash === '';
}

/** The pino options of a checked `logger` option, our redaction and mixin added; `false` for none. */
function resolveLogger(value: boolean | ServerLoggerOptions | undefined): false | ServerLoggerOptions {
  if (value === undefined || value === false) return false;
  const given: ServerLoggerOptions = value === true ? {} : value;
  const ours = REDACTED_HEADERS.flatMap((h) => [
    `req.headers["${h}"]`,
    `res.headers["${h}"]`,
    `headers["${h}"]`,
    `*.headers["${h}"]`,
  ]);
  const fields = REDACTED_FIELDS.flatMap((f) => [f, `*.${f}`]);
  const theirs = given.redact;
  const paths = Array.isArray(theirs) ? theirs : theirs === undefined ? [] : theirs.paths;
  const redactOptions: { censor?: unknown; remove?: boolean } =
    Array.isArray(theirs) || theirs === undefined ? {} : theirs;
  const theirCensor = redactOptions.censor ?? REDACTED;
  const theirMixin = given.mixin;
  return {
    level: 'info',
    ...given,
    redact: {
      ...redactOptions,
      paths: [...ours, ...fields, ...MASKED_TEXT_PATHS, ...paths],
      // Free text keeps what is not a secret; every other path is replaced whole (by your censor, if given).
      censor: (value: unknown, path: readonly unknown[]) => {
        if (isMaskedText(path)) return typeof value === 'string' ? redactText(value) : value;
        return typeof theirCensor === 'function' ? (theirCensor as Censor)(value, path) : theirCensor;
      },
    },
    // A new object each time: pino merges the line's fields into what the mixin returns.
    mixin: (line: object, level: number, logger: unknown) => {
      const scope = LogContext.fields();
      const base = theirMixin === undefined ? {} : theirMixin(line, level, logger as never);
      return scope === undefined ? base : { ...scope, ...base };
    },
  };
}
