/**
 * The `Idempotency-Key` route option for Fastify (draft-ietf-httpapi-idempotency-key-header;
 * docs/operations.md#inbound-idempotency-idempotency-key). operations/ cannot import server/, so problems are
 * answered here as problem+json through core's `toProblem`, in the server's shape (`instance` is the path,
 * `Retry-After` in whole seconds).
 */
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  RouteOptions,
  onErrorHookHandler,
  onResponseHookHandler,
  onSendHookHandler,
  preHandlerHookHandler,
} from 'fastify';
import {
  BreakwaterError,
  PROBLEM_CONTENT_TYPE,
  defineOptions,
  invalidOption,
  isBreakwaterError,
  isRequestTimeout,
  o,
  retryAfterHeader,
  toProblem,
  type Clock,
  type Report,
} from '../../core/index.js';
import { isSafeMethod, pathOf } from '../../http/index.js';
import type { IdempotencyRef, IdempotencyStore, StoredResponse } from '../../store/index.js';
import { FINGERPRINT_FIELDS_SCHEMA, requestFingerprint, type FingerprintFields } from './fingerprint.js';
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER, parseIdempotencyKey } from './key.js';
import { IDEMPOTENCY_DEFAULTS, finishIdempotent, lifetimesRule, startIdempotent, storedBody } from './run.js';
import { defaultIdempotencyScope } from './scope.js';

/** A route's `config.idempotency`: `true` for the plugin's defaults, or overrides. */
export interface IdempotencyRouteConfig {
  /** Answer 400 `idempotency_key_missing` to a request without the header (default: the plugin's, false). */
  required?: boolean;
  /** Which request fields make the fingerprint (default: the plugin's; method, path, whole body). */
  fields?: FingerprintFields;
  /** The client identity keys belong to (default: the plugin's; {@link defaultIdempotencyScope}). */
  scope?: (request: FastifyRequest) => string;
  /** ms, > 0 (default: the plugin's; {@link IDEMPOTENCY_DEFAULTS}). */
  lockMs?: number;
  /** ms, > `lockMs` (default: the plugin's; {@link IDEMPOTENCY_DEFAULTS}; see `checkIdempotencyLifetimes`). */
  ttlMs?: number;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Makes the route honour `Idempotency-Key` (see `registerIdempotency`). */
    idempotency?: boolean | IdempotencyRouteConfig;
  }
}

/** Options of {@link registerIdempotency}: the store, and the defaults of every route's config. */
export interface IdempotencyPluginOptions extends IdempotencyRouteConfig {
  store: IdempotencyStore;
  /** For the 409's `retry_after_ms` (default the system clock; give the store's). */
  clock?: Clock;
  /**
   * Response headers stored and replayed besides `content-type` and `location` (names, any case). Never
   * `set-cookie` (a session must not be handed to a retry) nor hop-by-hop or framing headers: those are
   * refused with an OptionsError.
   */
  replayHeaders?: readonly string[];
}

/** Headers that may never be stored for replay. */
const NEVER_REPLAYED = new Set([
  'set-cookie',
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'content-length',
  IDEMPOTENT_REPLAYED_HEADER,
]);

const REPLAY_HEADERS_RULE = 'header names other than set-cookie and hop-by-hop ones';

/** A route's config as declared; every member left out takes the plugin's. */
const ROUTE_SHAPE = {
  required: o.boolean().optional(),
  fields: FINGERPRINT_FIELDS_SCHEMA,
  scope: o.fn<(request: FastifyRequest) => string>().optional(),
  lockMs: o.number().positive().optional(),
  ttlMs: o.number().positive().optional(),
};

/** `ttlMs > lockMs` (see `checkIdempotencyLifetimes`), once both are numbers worth comparing. */
function checkLifetimes(lockMs: unknown, ttlMs: unknown, report: Report): void {
  if (typeof lockMs === 'number' && typeof ttlMs === 'number' && !(ttlMs > lockMs)) {
    report('ttlMs', lifetimesRule(lockMs), ttlMs);
  }
}

/** Checks {@link IdempotencyPluginOptions}; the defaults are {@link IDEMPOTENCY_DEFAULTS}, not required, the whole body, {@link defaultIdempotencyScope}. */
const parseOptions = defineOptions<IdempotencyPluginOptions>()(
  'registerIdempotency',
  {
    store: o.methods<IdempotencyStore>('an IdempotencyStore', 'begin'),
    clock: o.clock(),
    replayHeaders: o
      .custom<readonly string[]>(
        (names) =>
          Array.isArray(names) &&
          names.every(
            (name) => typeof name === 'string' && name !== '' && !NEVER_REPLAYED.has(name.toLowerCase()),
          ),
        REPLAY_HEADERS_RULE,
      )
      .default([]),
    required: o.boolean().default(false),
    fields: FINGERPRINT_FIELDS_SCHEMA,
    scope: o.fn<(request: FastifyRequest) => string>().default(defaultIdempotencyScope),
    lockMs: o.number().positive().default(IDEMPOTENCY_DEFAULTS.lockMs),
    ttlMs: o.number().positive().default(IDEMPOTENCY_DEFAULTS.ttlMs),
  },
  ({ lockMs, ttlMs }, report) => checkLifetimes(lockMs, ttlMs, report),
);

interface RouteSettings {
  required: boolean;
  fields: FingerprintFields | undefined;
  scope: (request: FastifyRequest) => string;
  lockMs: number;
  ttlMs: number;
}

type RequestState =
  | {
      kind: 'run';
      ref: IdempotencyRef;
      /** When the record expires (the store's clock): a settle refused after it found an expired record. */
      expiresAt: number;
      route: RouteSettings;
      failure: { error: unknown } | undefined;
      settled: boolean;
    }
  | { kind: 'answered' };

/**
 * Registers the `config.idempotency` route option on `app`, for the routes declared after this call in
 * `app` and its child contexts. Such a route, for a request that carries `Idempotency-Key`:
 * - preHandler (after auth, parsing and validation): parses the key (400 `idempotency_key_invalid`: empty,
 *   over 255 characters, sent twice), fingerprints the request, claims the key in the scope of the client;
 *   answers 409 `idempotency_in_progress` (with `Retry-After`) or 422 `idempotency_key_mismatch` as
 *   problem+json, or replays a completed response: its status, stored headers and body, plus
 *   `Idempotent-Replayed: true`; the handler does not run;
 * - onSend (the route's last): captures the status, the allowed headers and the payload, and stores them
 *   (awaited, before the response leaves) or releases the key per `shouldReleaseIdempotency`: an answer or
 *   a thrown error of status 408/409/425/429/503 releases, unless its outcome is unknown; any other is stored
 *   (an unexpected throw's 500 too). After Fastify's handler timeout on a non-safe method the handler may
 *   still be running: the record is left in progress (409 to retries) until its lock lapses. A stream payload
 *   cannot be stored: the key is released and a warning logged;
 * - onResponse: releases a key that onSend never settled (a hijacked reply).
 * A request without the header on a `required` route is answered 400 `idempotency_key_missing`; on another
 * route it runs normally.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`) naming every bad option, here (owner
 *   `registerIdempotency`) or, for a route's config, when the route is declared (owner
 *   `registerIdempotency (route <method> <url>)`).
 */
export function registerIdempotency(app: FastifyInstance, options: IdempotencyPluginOptions): void {
  const owner = 'registerIdempotency';
  const { store, clock, replayHeaders, ...defaults } = parseOptions(options);
  const allowed = new Set(['content-type', 'location', ...replayHeaders.map((name) => name.toLowerCase())]);
  const states = new WeakMap<FastifyRequest, RequestState>();

  const answer = (request: FastifyRequest, reply: FastifyReply, error: BreakwaterError): FastifyReply => {
    states.set(request, { kind: 'answered' });
    const retryAfter = retryAfterHeader(error);
    if (retryAfter !== undefined) void reply.header('retry-after', retryAfter);
    return reply
      .code(error.status)
      .header('content-type', `${PROBLEM_CONTENT_TYPE}; charset=utf-8`)
      .send(JSON.stringify(toProblem(error, pathOf(request))));
  };

  const preHandlerFor = (route: RouteSettings): preHandlerHookHandler =>
    async function idempotencyPreHandler(request, reply) {
      let key: string | undefined;
      try {
        key = parseIdempotencyKey(headerLines(request));
      } catch (error) {
        if (isBreakwaterError(error)) return answer(request, reply, error);
        throw error;
      }
      if (key === undefined) {
        if (route.required) return answer(request, reply, new BreakwaterError('idempotency_key_missing'));
        return;
      }
      const fingerprint = requestFingerprint(
        { method: request.method, url: request.url, body: request.body, headers: request.headers },
        route.fields,
      );
      let start;
      try {
        start = await startIdempotent({
          ...route,
          store,
          clock,
          key,
          fingerprint,
          scope: route.scope(request),
        });
      } catch (error) {
        if (isBreakwaterError(error) && error.code.startsWith('idempotency_')) {
          return answer(request, reply, error);
        }
        throw error;
      }
      if (start.outcome === 'replay') {
        states.set(request, { kind: 'answered' });
        const { response } = start;
        void reply.code(response.status).headers(response.headers).header(IDEMPOTENT_REPLAYED_HEADER, 'true');
        return reply.send(response.body === '' ? undefined : storedBody(response));
      }
      states.set(request, {
        kind: 'run',
        ref: start.ref,
        expiresAt: start.expiresAt,
        route,
        failure: undefined,
        settled: false,
      });
      if (start.takenOver) {
        request.log.warn(
          { idempotency_scope: start.ref.scope, lock_ms: route.lockMs },
          'idempotency key taken over after its lock ran out',
        );
      }
    };

  const onError: onErrorHookHandler = async function idempotencyOnError(request, _reply, error) {
    const state = states.get(request);
    if (state?.kind !== 'run') return;
    state.failure = { error };
    // Left in progress: counted as settled, so neither onSend nor onResponse stores or releases it.
    if (stillRunning(request, error)) state.settled = true;
  };

  const onSend: onSendHookHandler<unknown> = async function idempotencyOnSend(request, reply, payload) {
    const state = states.get(request);
    if (state?.kind !== 'run' || state.settled) return payload;
    state.settled = true;
    const response = capture(reply, payload, allowed);
    if (response === undefined) {
      request.log.warn('a streamed response cannot be stored for replay: the idempotency key was released');
    }
    await settle(request, state, response);
    return payload;
  };

  const onResponse: onResponseHookHandler = async function idempotencyOnResponse(request) {
    const state = states.get(request);
    if (state?.kind !== 'run' || state.settled) return;
    state.settled = true;
    await settle(request, state, undefined);
  };

  const settle = async (
    request: FastifyRequest,
    state: Extract<RequestState, { kind: 'run' }>,
    response: StoredResponse | undefined,
  ): Promise<void> => {
    try {
      const settled = await finishIdempotent(store, state.ref, response, state.failure);
      if (settled === 'not_owner') {
        // Two ways to lose a record: it expired (ttlMs; an expired record is replaced, never taken over), or,
        // still live, another request took it over once this run outlived its lock (lockMs).
        const scope = state.ref.scope;
        if (clock.now() >= state.expiresAt) {
          request.log.warn(
            { idempotency_scope: scope, ttl_ms: state.route.ttlMs },
            'idempotency record expired before this request finished: its response was not stored',
          );
        } else {
          request.log.warn(
            { idempotency_scope: scope, lock_ms: state.route.lockMs },
            'idempotency key was taken over after its lock ran out: this response was not stored',
          );
        }
      }
    } catch (error) {
      // The work is done and the client should get its answer; a retry after the lock runs out may run again.
      request.log.error({ err: error }, 'idempotency record could not be settled');
    }
  };

  app.addHook('onRoute', (route: RouteOptions) => {
    const config = route.config?.idempotency;
    if (config === undefined || config === false) return;
    const where = `${owner} (route ${route.method.toString()} ${route.url})`;
    if (config !== true && (typeof config !== 'object' || config === null)) {
      throw invalidOption(where, 'config.idempotency', 'true, false or an object', config);
    }
    const own = routeSettings(where, config === true ? {} : config, defaults);
    route.preHandler = [...hooks(route.preHandler), preHandlerFor(own)];
    route.onError = [...hooks(route.onError), onError];
    route.onSend = [...hooks(route.onSend), onSend];
    route.onResponse = [...hooks(route.onResponse), onResponse];
  });
}

/**
 * A route's settings: `config` over `base`, checked.
 * @throws OptionsError naming `owner` and every bad option; `ttlMs` when it is not greater than the `lockMs`
 *   it goes with, whichever of the two the route set (`checkIdempotencyLifetimes`).
 */
function routeSettings(owner: string, config: IdempotencyRouteConfig, base: RouteSettings): RouteSettings {
  // Made per route for its owner and its base: once per declaration, never per request.
  const own = defineOptions<IdempotencyRouteConfig>()(owner, ROUTE_SHAPE, ({ lockMs, ttlMs }, report) =>
    checkLifetimes(lockMs ?? base.lockMs, ttlMs ?? base.ttlMs, report),
  )(config);
  return {
    required: own.required ?? base.required,
    fields: own.fields ?? base.fields,
    scope: own.scope ?? base.scope,
    lockMs: own.lockMs ?? base.lockMs,
    ttlMs: own.ttlMs ?? base.ttlMs,
  };
}

/** The response as stored, or undefined for a payload that cannot be (a stream). */
function capture(
  reply: FastifyReply,
  payload: unknown,
  allowed: ReadonlySet<string>,
): StoredResponse | undefined {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    const lower = name.toLowerCase();
    if (!allowed.has(lower) || value === undefined) continue;
    headers[lower] = Array.isArray(value) ? value.join(', ') : String(value);
  }
  const status = reply.statusCode;
  if (payload === undefined || payload === null) return { status, headers, body: '', bodyEncoding: 'utf8' };
  if (typeof payload === 'string') return { status, headers, body: payload, bodyEncoding: 'utf8' };
  if (Buffer.isBuffer(payload))
    return { status, headers, body: payload.toString('base64'), bodyEncoding: 'base64' };
  return undefined;
}

/** Every line of the header as sent (Node joins repeated unknown headers with ", "; the raw list keeps them apart). */
function headerLines(request: FastifyRequest): string[] | string | undefined {
  const raw = request.raw.rawHeaders;
  if (!Array.isArray(raw)) return request.headers[IDEMPOTENCY_KEY_HEADER];
  const lines: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() === IDEMPOTENCY_KEY_HEADER) lines.push(raw[i + 1]!);
  }
  return lines.length === 0 ? undefined : lines;
}

/**
 * Fastify's handler timeout on a write: the answer went out, but the handler may still be running and finish
 * its work. Neither its 503 nor a release is right: the record stays in progress (retries get 409) until its
 * lock lapses, and then a retry takes it over.
 */
function stillRunning(request: FastifyRequest, error: unknown): boolean {
  return isRequestTimeout(error) && !isSafeMethod(request.method);
}

function hooks<H>(existing: H | H[] | undefined): H[] {
  if (existing === undefined) return [];
  return Array.isArray(existing) ? existing : [existing];
}
