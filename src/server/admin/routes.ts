/**
 * The dashboard and its admin JSON API as one Fastify plugin (docs/http.md, "Admin API and dashboard"):
 *
 * | method and path                               | answers                                                  |
 * | --------------------------------------------- | -------------------------------------------------------- |
 * | `GET /`                                       | the dashboard page (token mode, no session: 303 to login) |
 * | `GET /dashboard/:file`                        | its script and style files (public: no data in them)     |
 * | `GET /admin/login`, `POST /admin/login`       | the login form; `{ token }` (JSON or form) → the cookie  |
 * | `POST /admin/logout`                          | 204: the cookie's session revoked, the cookie cleared    |
 * | `GET /admin/api/overview`                     | {@link OverviewView}                                      |
 * | `GET /admin/api/series`                       | {@link SeriesView}                                        |
 * | `POST /admin/api/breakers/:name/isolate`      | the breaker, `isolated`                                  |
 * | `POST /admin/api/breakers/:name/reset`        | the breaker, `closed`                                    |
 * | `GET /admin/api/jobs?status=&type=&limit=`    | `{ jobs, next_before_id }`                               |
 * | `POST /admin/api/jobs/:id/retry`              | the job, `pending` again                                 |
 * | `GET /admin/api/operations?state=&action=`    | `{ operations, next_before_id }`                         |
 * | `POST /admin/api/operations/:id/reconcile`    | `{ outcome, operation }` (202 while `waiting`)           |
 * | `GET`/`POST /admin/api/keys…`                 | the API keys (keys.ts), when `keys` is given             |
 *
 * Every route but the login page and the files is behind {@link AdminAuth}. Errors are problem+json.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BreakwaterError, isBreakwaterError } from '../../core/index.js';
import { viaTls } from '../../http/index.js';
import {
  JOB_STATUSES,
  OPERATION_STATES,
  type JobStatus,
  type OperationState,
  type OperationStore,
} from '../../store/index.js';
import { JOB_ID_PARAMS, LIST_LIMITS } from '../jobs-routes.js';
import { toJobView } from '../views.js';
import type { ApiKeys } from '../../http/keys/index.js';
import { reconcileOperation, retryDeadLetter } from './actions.js';
import { refuseCrossSite, type AdminAccess, type AdminAuth } from './auth.js';
import { keyAdminRoutes } from './keys.js';
import { readOverview, type OverviewSources } from './overview.js';
import type { Series } from './series.js';
import type { WebFiles } from './static.js';
import { toBreakerView, toOperationView } from './views.js';

/** What the dashboard plugin needs. */
export interface AdminRoutesOptions extends OverviewSources {
  operations: OperationStore;
  auth: AdminAuth;
  series: Series;
  files: WebFiles;
  /** Runs an operation recovery pass now (the gateway's ledger `recover`), for reconcile. */
  recoverOperations?: () => Promise<unknown>;
  /** Longest wait of `POST …/reconcile` when the request names none, ms (createDashboard's default applied). */
  reconcileWaitMs: number;
  /** The gateway's API keys: mounts `/admin/api/keys…` (keys.ts). */
  keys?: ApiKeys;
}

const NAME_PARAMS = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', minLength: 1, maxLength: 255 } },
} as const;

interface ListQuery {
  limit: number;
  before_id?: string;
}

/** How each request in flight was let in (the overview tells the page). */
const accessOf = new WeakMap<FastifyRequest, AdminAccess>();

/** The `POST /admin/logout` requests that revoked a live session. */
const endedSessions = new WeakSet<FastifyRequest>();

/**
 * True when `request` was a `POST /admin/logout` that revoked a live session (what the audit records as
 * `admin.logout`; a logout without one changed nothing).
 */
export function endedAdminSession(request: FastifyRequest): boolean {
  return endedSessions.has(request);
}

/**
 * Headers of every dashboard and admin answer: no framing by another page (clickjacking: CSP
 * `frame-ancestors 'none'`, and `X-Frame-Options` for older browsers), no content sniffing, no referrer.
 */
export const ADMIN_SECURITY_HEADERS = {
  'content-security-policy': "frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
} as const;

/** Mounts the dashboard, its files, the login form and the admin API. */
export function adminRoutes(options: AdminRoutesOptions): (app: FastifyInstance) => Promise<void> {
  return async (app) => {
    app.addHook('onSend', async (_request, reply) => {
      void reply.headers(ADMIN_SECURITY_HEADERS);
    });
    await app.register(async (pub) => publicRoutes(pub, options));
    await app.register(async (api) => apiRoutes(api, options));
    const keys = options.keys;
    if (keys !== undefined) {
      await app.register(async (child) =>
        keyAdminRoutes(child, { keys, auth: options.auth, clock: options.clock }),
      );
    }
  };
}

/** The page, its files and the login form: answered before any credential is checked (the page checks). */
async function publicRoutes(app: FastifyInstance, options: AdminRoutesOptions): Promise<void> {
  const { auth, files } = options;
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 4096 },
    (_request, body, done) => done(null, Object.fromEntries(new URLSearchParams(body as string))),
  );

  const sendFile = async (reply: FastifyReply, name: string, cache: string) => {
    const file = await files.get(name);
    if (file === undefined) throw new BreakwaterError('not_found', { message: `There is no file ${name}.` });
    return reply.header('content-type', file.type).header('cache-control', cache).send(file.body);
  };

  app.get('/', async (request, reply) => {
    try {
      await auth.check(request);
    } catch (error) {
      // A browser without a session is sent to the login form; anything else (403) is answered as it is.
      if (isBreakwaterError(error) && error.status === 401) return reply.redirect('/admin/login', 303);
      throw error;
    }
    return sendFile(reply, 'index.html', 'no-store');
  });

  app.get<{ Params: { file: string } }>('/dashboard/:file', async (request, reply) =>
    sendFile(reply, request.params.file, 'no-cache'),
  );

  app.get('/admin/login', async (_request, reply) => sendFile(reply, 'login.html', 'no-store'));

  app.post<{ Body: { token?: unknown } | undefined }>('/admin/login', async (request, reply) => {
    refuseCrossSite(request);
    if (auth.mode === 'loopback') {
      throw new BreakwaterError('invalid_payload', {
        status: 409,
        message:
          'No admin token is configured: the dashboard answers clients on this machine without a login.',
        details: { reason: 'no_token_configured' },
      });
    }
    auth.throttle.refuseIfBlocked(request.ip);
    const token = (request.body as { token?: unknown } | undefined)?.token;
    if (!auth.verifyToken(token)) {
      auth.throttle.recordFailure(request.ip);
      void reply.header('www-authenticate', 'Bearer realm="breakwater-admin"');
      throw new BreakwaterError('unauthorized', {
        message: 'The admin token is wrong.',
        details: { reason: 'invalid_token' },
      });
    }
    void reply.header('set-cookie', await auth.openSession(request));
    void reply.header('cache-control', 'no-store');
    // A plain form post (no script) lands on the dashboard; the page's own fetch gets JSON.
    if (request.headers['content-type']?.startsWith('application/x-www-form-urlencoded') === true) {
      return reply.redirect('/', 303);
    }
    return { ok: true };
  });

  // No credential needed: it can only end the session of the cookie it carries (the cookie is the
  // credential), and a cross-site request is refused, so no other page can log the admin out.
  app.post('/admin/logout', async (request, reply) => {
    refuseCrossSite(request);
    if (await auth.closeSession(request)) endedSessions.add(request);
    return reply
      .code(204)
      .header('set-cookie', auth.clearCookie(viaTls(request)))
      .send();
  });
}

/** `/admin/api/…`, every route behind the admin check. */
async function apiRoutes(app: FastifyInstance, options: AdminRoutesOptions): Promise<void> {
  const { auth, jobs, publicUrl } = options;
  // No route reads a body: whatever a client sends (`curl -X POST -H 'content-type: application/json'` with
  // nothing) is read, up to 1 KiB, and ignored rather than refused as empty JSON.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 1024 }, (_request, _body, done) =>
    done(null, undefined),
  );
  app.addHook('onRequest', async (request, reply) => {
    accessOf.set(request, await auth.check(request, reply));
  });
  app.addHook('onSend', async (_request, reply) => {
    void reply.header('cache-control', 'no-store');
  });

  app.get('/admin/api/overview', async (request) =>
    readOverview(options, { mode: auth.mode, access: accessOf.get(request) ?? 'loopback' }),
  );

  app.get('/admin/api/series', async () => options.series.view());

  const breaker = (name: string) => {
    const found = options.breakers().find((b) => b.name === name);
    if (found === undefined) {
      throw new BreakwaterError('not_found', {
        message: `There is no breaker named ${JSON.stringify(name)}.`,
      });
    }
    return found;
  };
  app.post<{ Params: { name: string } }>(
    '/admin/api/breakers/:name/isolate',
    { schema: { params: NAME_PARAMS } },
    async (request) => {
      const found = breaker(request.params.name);
      found.isolate();
      return toBreakerView(found);
    },
  );
  app.post<{ Params: { name: string } }>(
    '/admin/api/breakers/:name/reset',
    { schema: { params: NAME_PARAMS } },
    async (request) => {
      const found = breaker(request.params.name);
      found.reset();
      return toBreakerView(found);
    },
  );

  app.get<{ Querystring: ListQuery & { status?: JobStatus[]; type?: string } }>(
    '/admin/api/jobs',
    {
      schema: {
        querystring: listSchema({
          // Repeat it for several: ?status=pending&status=failed.
          status: { type: 'array', items: { enum: JOB_STATUSES }, maxItems: JOB_STATUSES.length },
          type: { type: 'string', minLength: 1, maxLength: 255 },
        }),
      },
    },
    async (request) => {
      const { status, type, limit, before_id: beforeId } = request.query;
      const found = await jobs.list({
        ...(status === undefined ? {} : { status }),
        ...(type === undefined ? {} : { type }),
        ...(beforeId === undefined ? {} : { beforeId }),
        limit,
      });
      return {
        jobs: found.map((job) => toJobView(job, options.clock.now(), publicUrl)),
        next_before_id: found.length === limit ? (found.at(-1)?.id ?? null) : null,
      };
    },
  );

  app.post<{ Params: { id: string } }>(
    '/admin/api/jobs/:id/retry',
    { schema: { params: JOB_ID_PARAMS } },
    async (request) =>
      toJobView(await retryDeadLetter(jobs, request.params.id), options.clock.now(), publicUrl),
  );

  app.get<{ Querystring: ListQuery & { state?: OperationState[]; action?: string } }>(
    '/admin/api/operations',
    {
      schema: {
        querystring: listSchema({
          state: { type: 'array', items: { enum: OPERATION_STATES }, maxItems: OPERATION_STATES.length },
          action: { type: 'string', minLength: 1, maxLength: 255 },
        }),
      },
    },
    async (request) => {
      const { state, action, limit, before_id: beforeId } = request.query;
      const found = await options.operations.list({
        ...(state === undefined ? {} : { states: state }),
        ...(action === undefined ? {} : { action }),
        ...(beforeId === undefined ? {} : { beforeId }),
        limit,
      });
      return {
        operations: found.map(toOperationView),
        next_before_id: found.length === limit ? (found.at(-1)?.id ?? null) : null,
      };
    },
  );

  app.post<{ Params: { id: string }; Querystring: { wait_ms?: number } }>(
    '/admin/api/operations/:id/reconcile',
    {
      schema: {
        params: JOB_ID_PARAMS,
        querystring: {
          type: 'object',
          properties: { wait_ms: { type: 'integer', minimum: 0, maximum: 30_000 } },
        },
      },
    },
    async (request, reply) => {
      const done = await reconcileOperation(options.operations, request.params.id, {
        waitMs: request.query.wait_ms ?? options.reconcileWaitMs,
        recoverNow: options.recoverOperations,
        clock: options.clock,
      });
      return reply
        .code(done.outcome === 'waiting' ? 202 : 200)
        .send({ outcome: done.outcome, operation: toOperationView(done.record) });
    },
  );
}

function listSchema(properties: Record<string, unknown>) {
  return {
    type: 'object',
    properties: {
      ...properties,
      limit: { type: 'integer', minimum: 1, maximum: LIST_LIMITS.max, default: LIST_LIMITS.default },
      before_id: { type: 'string', minLength: 1, maxLength: 255 },
    },
  };
}
